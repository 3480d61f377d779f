package afterburn_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net/http"
	"time"

	"github.com/afterburn-dev/afterburn/go/afterburn"
)

// A function pays its start-up cost once, then serves requests with any net/http
// handler. Serve answers the watchdog's handshake only when it is called, so the
// worker is marked ready after initialisation.
func ExampleServe() {
	model := loadModel() // slow: done once per worker, not once per request

	mux := http.NewServeMux()
	mux.HandleFunc("POST /predict", func(w http.ResponseWriter, r *http.Request) {
		var in []float64
		if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		json.NewEncoder(w).Encode(model.predict(in))
	})

	// nil on shutdown (exit 0), an error when the worker must be replaced.
	if err := afterburn.Serve(mux); err != nil {
		log.Fatal(err)
	}
}

// The request id is the one the watchdog returns to the client and writes in its
// access log; use it to tie a function's logs to a request.
func ExampleRequestID() {
	http.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		log.Printf("request %s: %s %s", afterburn.RequestID(r), r.Method, r.URL.Path)
		fmt.Fprintf(w, "hello (request %s)\n", afterburn.RequestID(r))
	})
}

// The watchdog's deadline is the request context's deadline, so it bounds whatever
// the handler passes r.Context() to. TimeRemaining lets a handler decide up front.
func ExampleTimeRemaining() {
	http.HandleFunc("/report", func(w http.ResponseWriter, r *http.Request) {
		if afterburn.TimeRemaining(r) < 2*time.Second {
			http.Error(w, "not enough time left for a full report", http.StatusServiceUnavailable)
			return
		}
		// Leave half a second to write the answer before the watchdog gives up.
		ctx, cancel := context.WithTimeout(r.Context(), afterburn.TimeRemaining(r)-500*time.Millisecond)
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, "GET", "http://backend.internal/report", nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			http.Error(w, err.Error(), http.StatusGatewayTimeout)
			return
		}
		defer resp.Body.Close()
		io.Copy(w, resp.Body)
	})
}

// Flushing streams the response: each Flush sends what was written as one chunk,
// which the watchdog forwards to the client at once (server-sent events, tokens).
func Example_streaming() {
	http.HandleFunc("/events", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		rc := http.NewResponseController(w)
		for i := range 3 {
			fmt.Fprintf(w, "data: tick %d\n\n", i)
			if err := rc.Flush(); err != nil {
				return
			}
			select {
			case <-time.After(time.Second):
			case <-r.Context().Done(): // the deadline passed
				return
			}
		}
	})
}

// Under a watchdog started with -lanes, one worker process serves several requests
// at once, each handler call in a goroutine of its own. MaxLanes bounds how many.
// A handler waiting on something passes it r.Context(), which is cancelled when the
// watchdog gives up on the request, and tags its log lines with Logf.
func ExampleMaxLanes() {
	db := openDatabase() // shared by every lane: must be safe for concurrent use

	http.HandleFunc("/user", func(w http.ResponseWriter, r *http.Request) {
		name, err := db.lookup(r.Context(), r.URL.Query().Get("id"))
		if err != nil {
			afterburn.Logf(r, "lookup: %v", err) // "[request-id] lookup: context canceled"
			http.Error(w, "lookup failed", http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, name)
	})

	if err := afterburn.Serve(nil, afterburn.MaxLanes(64)); err != nil {
		log.Fatal(err)
	}
}

// Under the watchdog's default, lanes=auto, a function whose handler is safe for
// concurrent use asks for lanes itself: each worker then carries up to 8 requests at
// once, and the watchdog starts later workers with 8 lanes. The worker's environment
// overrides the 8 without a rebuild: AFTERBURN_GO_PREFERRED_LANES=1 serves one
// request at a time.
func ExamplePreferredLanes() {
	// Shared by every lane: safe for concurrent use, as net/http's clients are.
	client := &http.Client{Timeout: 5 * time.Second}

	http.HandleFunc("/stock", func(w http.ResponseWriter, r *http.Request) {
		req, err := http.NewRequestWithContext(r.Context(), "GET", "http://inventory.internal/stock", nil)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		resp, err := client.Do(req) // the lane waits here; the others serve on
		if err != nil {
			http.Error(w, "inventory unavailable", http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		io.Copy(w, resp.Body)
	})

	if err := afterburn.Serve(nil, afterburn.PreferredLanes(8)); err != nil {
		log.Fatal(err)
	}
}

type database struct{}

func openDatabase() *database { return &database{} }

func (db *database) lookup(ctx context.Context, id string) (string, error) {
	select {
	case <-time.After(10 * time.Millisecond): // a query
		return "user " + id, nil
	case <-ctx.Done():
		return "", ctx.Err()
	}
}

type model struct{ weights []float64 }

func loadModel() *model { return &model{weights: []float64{0.5, 0.25}} }

func (m *model) predict(in []float64) float64 {
	var s float64
	for i, x := range in {
		if i < len(m.weights) {
			s += m.weights[i] * x
		}
	}
	return s
}
