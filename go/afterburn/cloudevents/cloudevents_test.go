package cloudevents

import (
	"context"
	"encoding/json"
	"errors"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/afterburn-dev/afterburn/go/afterburn/internal/shapetest"
	"github.com/cloudevents/sdk-go/v2/event"
	"github.com/cloudevents/sdk-go/v2/protocol"
	cehttp "github.com/cloudevents/sdk-go/v2/protocol/http"
)

// notInGo lists the cases whose result the SDK's receivers cannot return, with the
// reason; the test checks that each such result is indeed no event.
var notInGo = map[string]string{
	"cloudevents/reply-plain": "a receiver returns an *event.Event and a protocol.Result: there is no plain response with headers and a body",
}

// Every case of conformance/shapes/cloudevents.json, read from the file. The receiver
// gets the event.Event (compared as the CloudEvents JSON format, which the SDK writes)
// and returns the case's event, or none.
func TestShapeVectors(t *testing.T) {
	shapetest.Run(t, shapetest.Load(t, "cloudevents"), func(t *testing.T, c shapetest.Case) {
		var result struct {
			Event    json.RawMessage `json:"event"`
			Response json.RawMessage `json:"response"`
		}
		if c.Result != nil {
			json.Unmarshal(c.Result, &result)
		}
		if why, ok := notInGo[c.ID]; ok {
			if result.Response == nil || result.Event != nil {
				t.Fatalf("listed as not expressible in Go, but its result is not a plain response: %s", c.Result)
			}
			t.Skip(why)
		}
		var reply *event.Event
		if result.Event != nil {
			reply = new(event.Event)
			if err := json.Unmarshal(result.Event, reply); err != nil {
				t.Fatalf("result event: %v", err)
			}
			// As a Go receiver makes its data: SetData, which encodes JSON compactly
			// (the event as parsed keeps the file's spacing).
			var data any = json.RawMessage(reply.Data())
			if !strings.Contains(reply.DataContentType(), "json") {
				data = string(reply.Data())
			}
			if err := reply.SetData(reply.DataContentType(), data); err != nil {
				t.Fatal(err)
			}
		}
		var got *event.Event
		h, err := NewHandler(func(ctx context.Context, e event.Event) (*event.Event, error) {
			got = &e
			return reply, nil
		})
		if err != nil {
			t.Fatal(err)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, c.Request.HTTP(t))
		if c.Event != nil {
			if got == nil {
				t.Fatalf("the receiver was not called; got %d %q", rec.Code, rec.Body)
			}
			b, err := json.Marshal(got)
			if err != nil {
				t.Fatal(err)
			}
			if d := shapetest.Subset(c.Event, b); d != "" {
				t.Errorf("event: %s\ngot %s", d, b)
			}
		}
		if c.Error != "" && got != nil {
			t.Errorf("the receiver was called with %v; want the request refused", got)
		}
		if c.Response != nil || c.Error != "" {
			shapetest.CheckResponse(t, c, rec)
		}
	})
}

const binaryEvent = "ce-specversion:1.0|ce-id:1|ce-source:s|ce-type:t"

func post(t *testing.T, fn interface{}) *httptest.ResponseRecorder {
	t.Helper()
	h, err := NewHandler(fn)
	if err != nil {
		t.Fatal(err)
	}
	r := httptest.NewRequest("POST", "/", strings.NewReader(""))
	for _, kv := range strings.Split(binaryEvent, "|") {
		k, v, _ := strings.Cut(kv, ":")
		r.Header.Set(k, v)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, r)
	return rec
}

func TestPercentEncode(t *testing.T) {
	for in, want := range map[string]string{"plain/x:y": "plain/x:y", `a b"%é`: "a%20b%22%25%C3%A9", "\x7f\t": "%7F%09"} {
		if got := percentEncode(in); got != want {
			t.Errorf("percentEncode(%q) = %q; want %q", in, got, want)
		}
	}
}

// A ce-* value that is not percent-encoding (a lone '%') makes no event: 400.
func TestBadPercentEncoding(t *testing.T) {
	h, _ := NewHandler(func() {})
	r := httptest.NewRequest("POST", "/", nil)
	r.Header.Set("ce-specversion", "1.0")
	r.Header.Set("ce-id", "1")
	r.Header.Set("ce-source", "s")
	r.Header.Set("ce-type", "100%")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, r)
	if rec.Code != 400 || rec.Header().Get("AfterBurn-Error") != "bad_request" {
		t.Errorf("got %d %v; want 400 bad_request", rec.Code, rec.Header())
	}
}

// The receiver signatures of the SDK's client.StartReceiver, each called.
func TestSignatures(t *testing.T) {
	called := 0
	for _, fn := range []interface{}{
		func() { called++ },
		func() error { called++; return nil },
		func(context.Context) { called++ },
		func(context.Context) protocol.Result { called++; return nil },
		func(event.Event) { called++ },
		func(event.Event) protocol.Result { called++; return nil },
		func(context.Context, event.Event) { called++ },
		func(context.Context, event.Event) protocol.Result { called++; return nil },
		func(event.Event) *event.Event { called++; return nil },
		func(event.Event) (*event.Event, protocol.Result) { called++; return nil, nil },
		func(context.Context, event.Event) *event.Event { called++; return nil },
		func(context.Context, event.Event) (*event.Event, error) { called++; return nil, nil },
	} {
		if rec := post(t, fn); rec.Code != 204 {
			t.Errorf("%T: got %d; want 204", fn, rec.Code)
		}
	}
	if called != 12 {
		t.Errorf("%d receivers called; want 12", called)
	}
	for _, fn := range []interface{}{nil, 42, func(string) {}, func(event.Event, context.Context) {}, func() int { return 0 }, func(...event.Event) {}} {
		if _, err := NewHandler(fn); err == nil {
			t.Errorf("NewHandler(%T): no error; want one", fn)
		}
	}
}

// A result of the SDK's HTTP protocol sets the status; any other error, and an invalid
// event returned, are handler errors (500, §8.1 body).
func TestResults(t *testing.T) {
	if rec := post(t, func(event.Event) protocol.Result { return cehttp.NewResult(202, "queued") }); rec.Code != 202 || rec.Body.Len() != 0 {
		t.Errorf("http.NewResult(202): got %d %q; want 202, no body", rec.Code, rec.Body)
	}
	// A reply made by event.New without an id or a time gets both (cloudevents.NewClientHTTP).
	rec := post(t, func(event.Event) *event.Event {
		e := event.New()
		e.SetSource("/s")
		e.SetType("t")
		return &e
	})
	if rec.Code != 200 || len(rec.Header().Get("Ce-Id")) != 36 || rec.Header().Get("Ce-Time") == "" {
		t.Errorf("a reply without id and time: got %d %v; want 200 with a UUID ce-id and a ce-time", rec.Code, rec.Header())
	}
	for name, fn := range map[string]interface{}{
		"error":         func(event.Event) error { return errors.New("secret") },
		"invalid event": func(event.Event) *event.Event { e := event.New(); e.SetSource("/s"); return &e },
	} {
		if rec := post(t, fn); rec.Code != 500 || rec.Header().Get("AfterBurn-Error") != "handler_error" || strings.Contains(rec.Body.String(), "secret") {
			t.Errorf("%s: got %d %v %q; want 500 handler_error", name, rec.Code, rec.Header(), rec.Body)
		}
	}
}
