package openfaas

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/afterburn-dev/afterburn/go/afterburn/internal/shapetest"
	handler "github.com/openfaas/templates-sdk/go-http"
)

// seen is the openfaas-http event of conformance/shapes/README.md, built from the
// handler.Request the handler got. golang-http's Request has no path (notInGo).
func seen(req handler.Request) json.RawMessage {
	query, _ := url.ParseQuery(req.QueryString)
	headers := map[string][]string{}
	for k, v := range req.Header {
		headers[strings.ToLower(k)] = v
	}
	ev := map[string]any{"method": req.Method, "query": query, "headers": headers,
		"body_b64": base64.StdEncoding.EncodeToString(req.Body)}
	if utf8.Valid(req.Body) {
		ev["body"] = string(req.Body)
	}
	b, _ := json.Marshal(ev)
	return b
}

// notInGo lists what a case asks of the event or result that golang-http's types
// cannot hold, with the reason; TestNotInGo fails when one of them can.
var notInGo = map[string]string{
	"event.path":                     "handler.Request has no path (templates-sdk go-http): golang-http never gave one",
	"openfaas-http/object-body-json": "handler.Response.Body is []byte: there is no object body to serialise",
	"openfaas-http/malformed-status": "handler.Response.StatusCode is an int: a string status cannot be returned (a status outside 100-599 is TestHandlerErrors)",
}

// result turns a case's result into the handler.Response a golang-http Handle returns;
// ok is false when Go's types cannot hold it.
func result(raw json.RawMessage) (res handler.Response, ok bool) {
	var r struct {
		StatusCode *int              `json:"statusCode"`
		Headers    map[string]string `json:"headers"`
		Body       *string           `json:"body"`
	}
	if string(raw) == "null" { // a handler that returns nothing: the zero Response
		return res, true
	}
	d := json.NewDecoder(bytes.NewReader(raw))
	d.DisallowUnknownFields()
	if err := d.Decode(&r); err != nil {
		return res, false
	}
	if r.StatusCode != nil {
		res.StatusCode = *r.StatusCode
	}
	if r.Headers != nil {
		res.Header = http.Header{}
		for k, v := range r.Headers {
			res.Header.Set(k, v)
		}
	}
	if r.Body != nil {
		res.Body = []byte(*r.Body)
	}
	return res, true
}

// Every case of conformance/shapes/openfaas-http.json, read from the file.
func TestShapeVectors(t *testing.T) {
	shapetest.Run(t, shapetest.Load(t, "openfaas-http"), func(t *testing.T, c shapetest.Case) {
		if why, ok := notInGo[c.ID]; ok {
			if c.Result == nil {
				t.Fatalf("listed as not expressible in Go, but has no result")
			}
			if _, ok := result(c.Result); ok {
				t.Fatalf("listed as not expressible in Go (%s), but its result is", why)
			}
			t.Skip(why)
		}
		var got handler.Request
		fn := func(req handler.Request) (handler.Response, error) {
			got = req
			if c.Result == nil {
				return handler.Response{}, nil
			}
			res, ok := result(c.Result)
			if !ok {
				t.Fatalf("result %s does not fit handler.Response; list it in notInGo", c.Result)
			}
			return res, nil
		}
		r := c.Request.HTTP(t)
		rec := httptest.NewRecorder()
		Handler(fn).ServeHTTP(rec, r)
		if c.Event != nil {
			var want map[string]json.RawMessage
			json.Unmarshal(c.Event, &want)
			delete(want, "path") // notInGo["event.path"]
			wb, _ := json.Marshal(want)
			if d := shapetest.Subset(wb, seen(got)); d != "" {
				t.Errorf("event: %s\ngot %s", d, seen(got))
			}
			if got.Host != r.Host || got.Context() != r.Context() {
				t.Errorf("Host %q, context %v; want %q and the request's", got.Host, got.Context(), r.Host)
			}
		}
		if c.Response != nil || c.Error != "" {
			shapetest.CheckResponse(t, c, rec)
		}
	})
}

// What notInGo says golang-http cannot express is still so.
func TestNotInGo(t *testing.T) {
	if _, ok := reflect.TypeOf(handler.Request{}).FieldByName("Path"); ok {
		t.Errorf("handler.Request has a Path now: drop event.path from notInGo and put it in seen")
	}
	if k := reflect.TypeOf(handler.Response{}.Body).Kind(); k != reflect.Slice {
		t.Errorf("handler.Response.Body is a %v now", k)
	}
}

// A status no HTTP response carries, and a returned error, are handler errors (§13):
// 500 with the §8.1 body; the result's body is not sent.
func TestHandlerErrors(t *testing.T) {
	for name, fn := range map[string]func(handler.Request) (handler.Response, error){
		"status 42": func(handler.Request) (handler.Response, error) {
			return handler.Response{StatusCode: 42, Body: []byte("x")}, nil
		},
		"status 600": func(handler.Request) (handler.Response, error) { return handler.Response{StatusCode: 600}, nil },
		"error": func(handler.Request) (handler.Response, error) {
			return handler.Response{Body: []byte("secret")}, errors.New("db down")
		},
	} {
		rec := httptest.NewRecorder()
		Handler(fn).ServeHTTP(rec, httptest.NewRequest("GET", "/", nil))
		if rec.Code != 500 || rec.Header().Get("AfterBurn-Error") != "handler_error" || strings.Contains(rec.Body.String(), "secret") {
			t.Errorf("%s: got %d %v %q; want 500 handler_error", name, rec.Code, rec.Header(), rec.Body)
		}
	}
}
