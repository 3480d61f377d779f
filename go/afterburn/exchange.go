package afterburn

import (
	"context"
	"encoding/hex"
	"math"
	"math/rand/v2"
	"net/http"
	"net/url"
	"sync"
	"sync/atomic"
	"time"
)

// exchange is one request and its response (PROTOCOL.md §1.2).
//
// It is also the request's context. Its deadline is known at once, but the machinery
// of a cancellable context — a channel, a timer for the deadline — costs three
// allocations and a timer per request that few handlers use, so the exchange makes
// the standard library's context only when something asks for Done, Err or a Value
// the exchange does not hold, and delegates to it from then on. Contexts derived from
// it (context.WithTimeout(r.Context(), …)) find that inner context through Value and
// attach to it without a goroutine, as they would to net/http's.
type exchange struct {
	c           *conn
	id          string // PROTOCOL.md §5.1
	token       string // PROTOCOL.md §4.6: the AfterBurn-Exchange to echo; "" without
	isHandshake bool   // PROTOCOL.md §3.1
	handshake   string // the offered versions

	req  *http.Request
	body body
	w    response

	// The request's URL and the backing array of its single-valued header fields
	// live in the exchange, which the request's context keeps alive anyway: two
	// allocations fewer per request.
	url    url.URL
	values [8]string

	deadline    time.Time // PROTOCOL.md §5.2, on the monotonic clock
	hasDeadline bool

	mu       sync.Mutex
	ended    bool // the handler returned, or the watchdog cancelled (§2.5): the context is cancelled
	innerCtx atomic.Pointer[innerContext]
}

// cancelAfterDeadline is how long after a request's deadline the library cancels its
// context (PROTOCOL.md §5.2): the watchdog answers the client at the deadline, and a
// handler cancelled sooner could end its response first, which the watchdog would take
// for the worker's fault (§2.5, §8.6).
const cancelAfterDeadline = 50 * time.Millisecond

type innerContext struct {
	ctx    context.Context
	cancel context.CancelFunc
}

type contextKey struct{}

func (ex *exchange) inner() context.Context {
	if in := ex.innerCtx.Load(); in != nil {
		return in.ctx
	}
	ex.mu.Lock()
	defer ex.mu.Unlock()
	if in := ex.innerCtx.Load(); in != nil {
		return in.ctx
	}
	in := new(innerContext)
	if ex.hasDeadline {
		// PROTOCOL.md §5.2, §8.6: the library's own cancellation fires
		// cancelAfterDeadline after the deadline, so that the watchdog's 504
		// comes first; Deadline still reports the deadline itself.
		in.ctx, in.cancel = context.WithDeadline(context.Background(), ex.deadline.Add(cancelAfterDeadline))
	} else {
		in.ctx, in.cancel = context.WithCancel(context.Background())
	}
	if ex.ended {
		in.cancel()
	}
	ex.innerCtx.Store(in)
	return in.ctx
}

// cancel cancels the request's context; net/http does so when ServeHTTP returns, and
// so does a line of the cancel pipe naming the exchange (PROTOCOL.md §2.5), from the
// goroutine that reads it.
func (ex *exchange) cancel() {
	ex.mu.Lock()
	ex.ended = true
	in := ex.innerCtx.Load()
	ex.mu.Unlock()
	if in != nil {
		in.cancel()
	}
}

func (ex *exchange) Deadline() (time.Time, bool) { return ex.deadline, ex.hasDeadline }
func (ex *exchange) Done() <-chan struct{}       { return ex.inner().Done() }
func (ex *exchange) Err() error                  { return ex.inner().Err() }
func (ex *exchange) String() string              { return "afterburn request context" }

func (ex *exchange) Value(key any) any {
	if key == (contextKey{}) {
		return ex
	}
	return ex.inner().Value(key)
}

func exchangeOf(ctx context.Context) *exchange {
	ex, _ := ctx.Value(contextKey{}).(*exchange)
	return ex
}

// RequestID returns the id of the request (PROTOCOL.md §5.1): the watchdog's
// AfterBurn-Request-Id, which the watchdog also returns to the client and writes in its
// access log. Under a watchdog that sends none (§11.1) the library generates one, 32
// lower-case hex digits. RequestID returns "" for a request that Serve did not make.
//
// The AfterBurn-Request-Id field itself is removed from r.Header (§5.3).
func RequestID(r *http.Request) string {
	if ex := exchangeOf(r.Context()); ex != nil {
		return ex.id
	}
	return ""
}

// TimeRemaining returns the time left before the request's deadline, never negative.
// The deadline is that of r.Context(): for a request from Serve, the moment the
// request head was read plus the AfterBurn-Timeout-Ms the watchdog sent (PROTOCOL.md
// §5.2), measured on the monotonic clock. Without a deadline TimeRemaining returns the
// largest time.Duration, so a check like TimeRemaining(r) < need needs no special case.
//
// The context is also cancelled 50 ms after the deadline, and when the handler returns.
func TimeRemaining(r *http.Request) time.Duration {
	d, ok := r.Context().Deadline()
	if !ok {
		return math.MaxInt64
	}
	return max(time.Until(d), 0)
}

// newRequestID makes a request id as the watchdog would: a random 128-bit value as 32
// lower-case hex digits (PROTOCOL.md §5.1, §11.1).
func newRequestID() string {
	var b [16]byte
	for i := 0; i < 16; i += 8 {
		v := rand.Uint64()
		for j := 0; j < 8; j++ {
			b[i+j] = byte(v >> (8 * j))
		}
	}
	return hex.EncodeToString(b[:])
}
