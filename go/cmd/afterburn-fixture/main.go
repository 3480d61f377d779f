// Command afterburn-fixture is the Go library's conformance fixture: a function that
// implements every route and environment variable of the fixture contract in
// conformance/README.md with the public API of package afterburn, so that the
// conformance suite can check the library from outside.
//
// Run it under a watchdog, or let the suite start it:
//
//	afterburn-conformance -watchdog go/bin/afterburn-watchdog -function go/bin/afterburn-fixture
package main

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/afterburn-dev/afterburn/go/afterburn"
)

func main() {
	log.SetFlags(0)
	log.SetPrefix("afterburn-fixture: ")
	if err := initialise(); err != nil {
		log.Fatalf("initialisation failed: %v", err) // PROTOCOL.md §9.1: exit non-zero, reason on stderr
	}
	if err := afterburn.Serve(http.HandlerFunc(serve)); err != nil {
		log.Fatal(err)
	}
}

// initialise applies the FIXTURE_* variables, read once at start-up.
func initialise() error {
	if t, ok := os.LookupEnv("FIXTURE_BANNER"); ok {
		fmt.Println(t)
		syscall.Write(1, []byte(t+"\n"))
	}
	if v := os.Getenv("FIXTURE_INIT_SLEEP_MS"); v != "" {
		ms, err := strconv.Atoi(v)
		if err != nil {
			return fmt.Errorf("bad FIXTURE_INIT_SLEEP_MS %q", v)
		}
		time.Sleep(time.Duration(ms) * time.Millisecond)
	}
	if os.Getenv("FIXTURE_INIT_FAIL") == "1" {
		return errors.New("FIXTURE_INIT_FAIL=1")
	}
	if p := os.Getenv("FIXTURE_INIT_FAIL_IF_EXISTS"); p != "" {
		if _, err := os.Stat(p); err == nil {
			return fmt.Errorf("FIXTURE_INIT_FAIL_IF_EXISTS: %s exists", p)
		}
	}
	return nil
}

// requests counts the user requests this process served (/whoami).
var requests atomic.Int64

// serve routes on the raw path; http.ServeMux would clean paths such as
// /echo/../x, which the echo route must report as sent.
func serve(w http.ResponseWriter, r *http.Request) {
	n := requests.Add(1)
	path, _, _ := strings.Cut(r.RequestURI, "?")
	q := r.URL.Query()
	switch path {
	case "/status":
		code, err := strconv.Atoi(q.Get("code"))
		if err != nil || code < 100 || code > 999 {
			code = http.StatusBadRequest
		}
		w.WriteHeader(code)
	case "/headers":
		for _, kv := range orderedQuery(r.URL.RawQuery) {
			w.Header().Add(kv[0], kv[1])
		}
	case "/stream":
		count, size := atoi(q.Get("n")), atoi(q.Get("size"))
		w.WriteHeader(http.StatusOK)
		for i := range count {
			w.Write([]byte(strings.Repeat(strconv.Itoa(i%10), size)))
			w.(http.Flusher).Flush()
		}
	case "/lockstep":
		lockstep(w, r)
	case "/large":
		large(w, atoi(q.Get("size")), q.Get("chunked") == "1")
	case "/sha256":
		h := sha256.New()
		n, err := io.Copy(h, r.Body)
		if err != nil {
			return // the library answers the framing error (PROTOCOL.md §8.8)
		}
		reply(w, map[string]any{"len": n, "sha256": hex.EncodeToString(h.Sum(nil))})
	case "/read-partial":
		got, _ := io.ReadFull(r.Body, make([]byte, atoi(q.Get("n"))))
		reply(w, map[string]any{"read": got})
	case "/sleep", "/ignore-cancel":
		// With lanes (PROTOCOL.md §2.5) each request has a goroutine of its own, so
		// the sleep holds its own lane only. It ignores the request's cancellation.
		ms := atoi(q.Get("ms"))
		time.Sleep(time.Duration(ms) * time.Millisecond)
		reply(w, map[string]any{"slept_ms": ms})
	case "/wait-cancel":
		waitCancel(w, r, atoi(q.Get("ms")))
	case "/trailers":
		trailers(w, r)
	case "/log":
		afterburn.Logf(r, "%s", q.Get("text"))
		reply(w, map[string]any{"logged": true})
	case "/deadline":
		_, has := r.Context().Deadline()
		remaining := int64(-1)
		if has {
			remaining = afterburn.TimeRemaining(r).Milliseconds()
		}
		reply(w, map[string]any{"has_deadline": has, "remaining_ms": remaining, "request_id": afterburn.RequestID(r)})
	case "/whoami":
		reply(w, map[string]any{"pid": os.Getpid(), "worker_id": os.Getenv("AFTERBURN_WORKER_ID"),
			"protocol": os.Getenv("AFTERBURN_PROTOCOL"), "requests": n})
	case "/throw":
		if q.Get("when") == "mid-body" {
			w.WriteHeader(http.StatusOK)
			io.WriteString(w, "partial")
			w.(http.Flusher).Flush()
		}
		panic("fixture: /throw")
	case "/crash":
		status := 13
		if v := q.Get("status"); v != "" {
			status, _ = strconv.Atoi(v)
		}
		switch q.Get("when") {
		case "mid-body":
			r.Body.Read(make([]byte, 1))
		case "after-head":
			w.WriteHeader(http.StatusOK)
			io.WriteString(w, "partial")
			w.(http.Flusher).Flush()
		case "after-response":
			// A declared Content-Length makes the flushed response complete.
			w.Header().Set("Content-Length", "3")
			io.WriteString(w, "bye")
			w.(http.Flusher).Flush()
		}
		os.Exit(status)
	case "/hang":
		// when=after-head: half a response, then nothing (§8.6, §8.7).
		w.WriteHeader(http.StatusOK)
		io.WriteString(w, "partial")
		w.(http.Flusher).Flush()
		select {}
	case "/print":
		t := q.Get("text")
		fmt.Println(t)
		syscall.Write(1, []byte(t+"\n"))
		fmt.Fprintln(os.Stderr, t)
		reply(w, map[string]any{"printed": true})
	case "/garbage":
		switch when := q.Get("when"); when {
		case "late", "child":
			ms := 50
			if v := q.Get("ms"); v != "" {
				ms = atoi(v)
			}
			lateWriter(r, when, ms)
			reply(w, map[string]any{"late": true})
		default:
			garbage(when)
		}
	default:
		echo(w, r)
	}
}

// waitCancel waits until the request's context is done — the watchdog cancelled the
// exchange (§2.5) or its deadline passed (§5.2) — or ms milliseconds pass.
func waitCancel(w http.ResponseWriter, r *http.Request, ms int) {
	timer := time.NewTimer(time.Duration(ms) * time.Millisecond)
	defer timer.Stop()
	cancelled := false
	select {
	case <-r.Context().Done():
		cancelled = true
		fmt.Fprintf(os.Stderr, "cancelled %s\n", afterburn.RequestID(r))
	case <-timer.C:
	}
	reply(w, map[string]any{"cancelled": cancelled})
}

// trailers answers the request trailers the handler sees, after the whole body, in a
// chunked body followed by the response trailer X-Fixture-Trailer: done (PROTOCOL.md
// §6.7; conformance/README.md, the fixture contract).
func trailers(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return // the library answers the framing error (PROTOCOL.md §8.8)
	}
	got := map[string]string{}
	for k, vv := range r.Trailer {
		if len(vv) > 0 { // a name declared in Trailer but not sent has no value
			got[strings.ToLower(k)] = strings.Join(vv, ", ")
		}
	}
	w.Header().Set("Trailer", "X-Fixture-Trailer") // declared: the body goes out chunked
	reply(w, map[string]any{"body": string(body), "trailers": got})
	w.Header().Set("X-Fixture-Trailer", "done")
}

func atoi(s string) int {
	n, _ := strconv.Atoi(s)
	return n
}

func reply(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(v)
}

// orderedQuery decodes a query string keeping the order and repeats of its pairs.
func orderedQuery(raw string) [][2]string {
	var out [][2]string
	for _, pair := range strings.Split(raw, "&") {
		if pair == "" {
			continue
		}
		k, v, _ := strings.Cut(pair, "=")
		k, _ = url.QueryUnescape(k)
		v, _ = url.QueryUnescape(v)
		out = append(out, [2]string{k, v})
	}
	return out
}

func lockstep(w http.ResponseWriter, r *http.Request) {
	w.WriteHeader(http.StatusOK)
	buf := make([]byte, 0, 4096)
	one := make([]byte, 4096)
	for {
		n, err := r.Body.Read(one)
		buf = append(buf, one[:n]...)
		for {
			i := slices.Index(buf, '\n')
			if i < 0 {
				break
			}
			w.Write(buf[:i+1])
			w.(http.Flusher).Flush()
			buf = buf[i+1:]
		}
		if err != nil {
			if len(buf) > 0 && err == io.EOF {
				w.Write(buf)
				w.(http.Flusher).Flush()
			}
			return
		}
	}
}

func large(w http.ResponseWriter, size int, chunked bool) {
	w.Header().Set("Content-Type", "application/octet-stream")
	if chunked {
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush() // commits to chunked framing
	} else {
		w.Header().Set("Content-Length", strconv.Itoa(size))
	}
	buf := make([]byte, 32<<10)
	for i := 0; i < size; {
		n := min(len(buf), size-i)
		for j := range n {
			buf[j] = byte((i + j) % 251)
		}
		if _, err := w.Write(buf[:n]); err != nil {
			return
		}
		i += n
	}
}

// echo answers with the echo format of conformance/README.md.
func echo(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return // the library answers the framing error (PROTOCOL.md §8.8)
	}
	path, query, _ := strings.Cut(r.RequestURI, "?")
	headers := [][2]string{{"host", r.Host}} // Go keeps Host apart, in r.Host
	headers = append(headers, fields(r.Header)...)
	for _, te := range r.TransferEncoding { // and Transfer-Encoding in r.TransferEncoding
		headers = append(headers, [2]string{"transfer-encoding", te})
	}
	reply(w, map[string]any{
		"method":     r.Method,
		"path":       path,
		"query":      query,
		"headers":    headers,
		"trailers":   fields(r.Trailer),
		"body_b64":   base64.StdEncoding.EncodeToString(body),
		"body_len":   len(body),
		"request_id": afterburn.RequestID(r),
	})
}

// fields lists h as [name, value] pairs, names lower-cased; each name's values keep
// their order, which is all the echo format asks of a map.
func fields(h http.Header) [][2]string {
	out := [][2]string{}
	keys := make([]string, 0, len(h))
	for k := range h {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		for _, v := range h[k] {
			out = append(out, [2]string{strings.ToLower(k), v})
		}
	}
	return out
}
