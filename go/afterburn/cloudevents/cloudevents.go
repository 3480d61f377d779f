// Package cloudevents serves a CloudEvents handler written on the Go SDK
// (github.com/cloudevents/sdk-go/v2) — the shape Knative Eventing delivers and Knative
// func's Go templates are written in — under AfterBurn, unchanged:
//
//	func Handle(ctx context.Context, e event.Event) (*event.Event, error) { ... }
//
//	func main() { cloudevents.Start(Handle) }
//
// The handler may have any signature the SDK's client.StartReceiver accepts: an optional
// context.Context and an optional event.Event in, and nothing, a protocol.Result (an
// error), an *event.Event, or both out. The shape is cloudevents of PROTOCOL.md §13, held
// to conformance/shapes/cloudevents.json.
//
// A request in binary mode (ce-* fields) or structured mode
// (application/cloudevents+json) is read into an event.Event by the SDK's HTTP binding
// and validated; a request that makes no valid CloudEvent is answered 400 with the error
// response of PROTOCOL.md §8.1 (type bad_request). An event returned is written in binary
// mode, 200, with an id and a time when it has none, as the SDK's HTTP client does; no
// event, 204. A result of the SDK's HTTP protocol (http.NewResult(status,
// …)) sets the status; any other error, or an invalid event returned, is the handler's:
// 500, type handler_error, logged with the request id, and the worker serves on.
//
// The SDK has no result for a plain HTTP response with headers and a body; a handler
// that needs one is an http.Handler, served by afterburn.Serve directly.
package cloudevents

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net/http"
	"net/url"
	"reflect"
	"strings"

	"github.com/afterburn-dev/afterburn/go/afterburn"
	"github.com/cloudevents/sdk-go/v2/binding"
	"github.com/cloudevents/sdk-go/v2/client"
	"github.com/cloudevents/sdk-go/v2/event"
	cehttp "github.com/cloudevents/sdk-go/v2/protocol/http"
)

// Start serves fn through afterburn.Serve until the watchdog stops the worker. It exits
// the process with status 1 (log.Fatal) if fn is not a receiver or Serve fails.
func Start(fn interface{}) {
	h, err := NewHandler(fn)
	if err != nil {
		log.Fatal(err)
	}
	if err := afterburn.Serve(h); err != nil {
		log.Fatal(err)
	}
}

// NewHandler returns an http.Handler that reads a CloudEvent from every request and
// calls fn with it, or an error if fn has no signature of a receiver.
func NewHandler(fn interface{}) (http.Handler, error) {
	v := reflect.ValueOf(fn)
	if fn == nil || v.Kind() != reflect.Func || v.IsNil() || v.Type().IsVariadic() {
		return nil, fmt.Errorf("cloudevents: receiver %T is not a function", fn)
	}
	t := v.Type()
	r := &receiver{fn: v}
	in := 0
	if in < t.NumIn() && t.In(in) == contextType {
		r.takesContext = true
		in++
	}
	if in < t.NumIn() && t.In(in) == eventType {
		r.takesEvent = true
		in++
	}
	out := 0
	if out < t.NumOut() && t.Out(out) == eventPtrType {
		r.returnsEvent = true
		out++
	}
	if out < t.NumOut() && t.Out(out).Kind() == reflect.Interface && t.Out(out).Implements(errorType) {
		r.returnsError = true
		out++
	}
	if in != t.NumIn() || out != t.NumOut() {
		return nil, fmt.Errorf("cloudevents: receiver %T: want func([context.Context,] [event.Event]) [*event.Event] [error]", fn)
	}
	return r, nil
}

var (
	contextType  = reflect.TypeOf((*context.Context)(nil)).Elem()
	eventType    = reflect.TypeOf(event.Event{})
	eventPtrType = reflect.TypeOf((*event.Event)(nil))
	errorType    = reflect.TypeOf((*error)(nil)).Elem()
)

type receiver struct {
	fn                         reflect.Value
	takesContext, takesEvent   bool
	returnsEvent, returnsError bool
}

func (rc *receiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	e, err := readEvent(r)
	if err != nil {
		afterburn.Error(w, r, http.StatusBadRequest, fmt.Errorf("cloudevents: not a CloudEvent: %w", err))
		return
	}
	reply, err := rc.call(r.Context(), *e)
	status := http.StatusOK
	var res *cehttp.Result
	switch {
	case err == nil:
	case errors.As(err, &res) && res.StatusCode >= 100 && res.StatusCode <= 599:
		status = res.StatusCode
	default:
		afterburn.Error(w, r, http.StatusInternalServerError, fmt.Errorf("cloudevents: the receiver returned an error: %w", err))
		return
	}
	if reply == nil {
		if status == http.StatusOK {
			status = http.StatusNoContent
		}
		w.WriteHeader(status)
		return
	}
	// As cloudevents.NewClientHTTP, whose receivers these are: a reply without an id
	// gets a UUID, one without a time the current time (client.WithUUIDs, WithTimeNow).
	*reply = client.DefaultTimeToNowIfNotSet(r.Context(), client.DefaultIDToUUIDIfNotSet(r.Context(), *reply))
	if err := reply.Validate(); err != nil {
		afterburn.Error(w, r, http.StatusInternalServerError, fmt.Errorf("cloudevents: the receiver returned an invalid event: %w", err))
		return
	}
	ctx := binding.WithForceBinary(r.Context())
	if err := cehttp.WriteResponseWriter(ctx, binding.ToMessage(reply), status, &encodingWriter{w}); err != nil {
		afterburn.Logf(r, "cloudevents: writing the reply: %v", err)
	}
}

func (rc *receiver) call(ctx context.Context, e event.Event) (*event.Event, error) {
	var args []reflect.Value
	if rc.takesContext {
		args = append(args, reflect.ValueOf(&ctx).Elem())
	}
	if rc.takesEvent {
		args = append(args, reflect.ValueOf(e))
	}
	out := rc.fn.Call(args)
	var reply *event.Event
	if rc.returnsEvent {
		reply = out[0].Interface().(*event.Event)
		out = out[1:]
	}
	if rc.returnsError {
		if err, _ := out[0].Interface().(error); err != nil {
			return reply, err
		}
	}
	return reply, nil
}

// readEvent reads the CloudEvent of r, in binary or structured mode, and validates it.
// The SDK's HTTP binding does not percent-decode ce-* values (HTTP protocol binding
// 3.1.3.2), so they are decoded here first, on a copy of the header.
func readEvent(r *http.Request) (*event.Event, error) {
	h := r.Header.Clone()
	for k, vs := range h {
		if !isCEField(k) {
			continue
		}
		for i, v := range vs {
			d, err := url.PathUnescape(v)
			if err != nil {
				return nil, fmt.Errorf("%s: %q is not percent-encoded: %w", k, v, err)
			}
			vs[i] = d
		}
	}
	rr := *r
	rr.Header = h
	e, err := cehttp.NewEventFromHTTPRequest(&rr)
	if err != nil {
		return nil, err
	}
	return e, e.Validate()
}

func isCEField(name string) bool {
	return len(name) > 3 && strings.EqualFold(name[:3], "ce-")
}

// encodingWriter percent-encodes the ce-* values the SDK writes (3.1.3.2: space, '"',
// '%' and every byte outside printable ASCII) as the head goes out.
type encodingWriter struct{ http.ResponseWriter }

func (w *encodingWriter) WriteHeader(code int) {
	for k, vs := range w.Header() {
		if isCEField(k) {
			for i, v := range vs {
				vs[i] = percentEncode(v)
			}
		}
	}
	w.ResponseWriter.WriteHeader(code)
}

func percentEncode(v string) string {
	var b strings.Builder
	for i := 0; i < len(v); i++ {
		c := v[i]
		if c <= ' ' || c == '"' || c == '%' || c >= 0x7f {
			fmt.Fprintf(&b, "%%%02X", c)
		} else {
			b.WriteByte(c)
		}
	}
	return b.String()
}
