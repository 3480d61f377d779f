package lambda

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/afterburn-dev/afterburn/go/afterburn/internal/shapetest"
	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambdacontext"
)

// Every case of conformance/shapes/lambda-http.json, read from the file. The handler
// takes the event as raw JSON (what the adapter hands aws-lambda-go, which decodes it
// into the handler's type) and returns the case's result as raw JSON, which
// aws-lambda-go encodes as it encodes any result.
func TestShapeVectors(t *testing.T) {
	shapetest.Run(t, shapetest.Load(t, "lambda-http"), func(t *testing.T, c shapetest.Case) {
		var event json.RawMessage
		var lc *lambdacontext.LambdaContext
		var remaining time.Duration
		var hasDeadline bool
		h := func(ctx context.Context, ev json.RawMessage) (json.RawMessage, error) {
			event = ev
			lc, _ = lambdacontext.FromContext(ctx)
			var d time.Time
			d, hasDeadline = ctx.Deadline()
			remaining = time.Until(d)
			if c.Result == nil {
				return json.RawMessage(`{"statusCode":200}`), nil
			}
			return c.Result, nil
		}
		a := NewHandler(h).(*adapter)
		a.requestID = func(*http.Request) string { return c.Request.RequestID }
		rec := httptest.NewRecorder()
		a.ServeHTTP(rec, c.Request.HTTP(t))
		if c.Event != nil {
			if d := shapetest.Subset(c.Event, event); d != "" {
				t.Errorf("event: %s\ngot %s", d, event)
			}
			// The event decodes into aws-lambda-go's types, both of them.
			var v2 events.APIGatewayV2HTTPRequest
			var furl events.LambdaFunctionURLRequest
			if err := json.Unmarshal(event, &v2); err != nil || json.Unmarshal(event, &furl) != nil ||
				v2.RequestContext.RequestID != c.Request.RequestID || furl.RequestContext.RequestID != c.Request.RequestID {
				t.Errorf("event does not decode into events.APIGatewayV2HTTPRequest and LambdaFunctionURLRequest with the request id: %v\n%s", err, event)
			}
		}
		if c.Context != nil {
			if lc == nil || lc.AwsRequestID != c.Context.AWSRequestID {
				t.Errorf("lambdacontext: %+v; want AwsRequestID %q", lc, c.Context.AWSRequestID)
			}
			ms := remaining.Milliseconds()
			if !hasDeadline || ms < c.Context.RemainingMinMS || ms > c.Context.RemainingMaxMS {
				t.Errorf("remaining %d ms (deadline %v); want %d to %d", ms, hasDeadline, c.Context.RemainingMinMS, c.Context.RemainingMaxMS)
			}
		}
		if c.Response != nil || c.Error != "" {
			shapetest.CheckResponse(t, c, rec)
		}
	})
}

// The handlers of aws-lambda-go's documentation, on its own types: the result struct is
// encoded by aws-lambda-go (its statusCode always present, headers null when unset), and
// both event types arrive.
func TestTypedHandlers(t *testing.T) {
	for name, h := range map[string]interface{}{
		"APIGatewayV2HTTP": func(ctx context.Context, req events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
			return events.APIGatewayV2HTTPResponse{StatusCode: 200, Body: req.RawPath + " " + req.QueryStringParameters["q"],
				Cookies: []string{"a=1"}, MultiValueHeaders: map[string][]string{"X-M": {"1", "2"}}}, nil
		},
		"LambdaFunctionURL": func(req events.LambdaFunctionURLRequest) (events.LambdaFunctionURLResponse, error) {
			return events.LambdaFunctionURLResponse{StatusCode: 200, Body: req.RawPath + " " + req.QueryStringParameters["q"],
				Cookies: []string{"a=1"}, Headers: map[string]string{"X-M": "1"}}, nil
		},
	} {
		rec := httptest.NewRecorder()
		NewHandler(h).ServeHTTP(rec, httptest.NewRequest("GET", "/p?q=v", nil))
		if rec.Code != 200 || rec.Body.String() != "/p v" || rec.Header().Get("Set-Cookie") != "a=1" || rec.Header().Get("X-M") != "1" {
			t.Errorf("%s: got %d %v %q; want 200 with Set-Cookie, X-M and body %q", name, rec.Code, rec.Header(), rec.Body, "/p v")
		}
	}
}

// A handler's error, a zero statusCode (a struct returned without one) and a handler of
// a signature aws-lambda-go refuses are handler errors: 500, §8.1 body, worker kept.
func TestHandlerErrors(t *testing.T) {
	for name, h := range map[string]interface{}{
		"error": func() (events.APIGatewayV2HTTPResponse, error) {
			return events.APIGatewayV2HTTPResponse{StatusCode: 200, Body: "secret"}, errors.New("db down")
		},
		"zero statusCode": func() (events.APIGatewayV2HTTPResponse, error) {
			return events.APIGatewayV2HTTPResponse{Body: "secret"}, nil
		},
		"not a handler": 42,
	} {
		rec := httptest.NewRecorder()
		NewHandler(h).ServeHTTP(rec, httptest.NewRequest("GET", "/", nil))
		if rec.Code != 500 || rec.Header().Get("AfterBurn-Error") != "handler_error" || strings.Contains(rec.Body.String(), "secret") {
			t.Errorf("%s: got %d %v %q; want 500 handler_error", name, rec.Code, rec.Header(), rec.Body)
		}
	}
}

// §13's list of textual content types, and what is not on it.
func TestIsText(t *testing.T) {
	for ct, want := range map[string]bool{
		"text/plain; charset=utf-8": true, "text/csv": true, "application/json": true, "application/problem+json": true,
		"application/xml": true, "application/atom+xml": true, "application/x-www-form-urlencoded": true,
		"application/javascript": true, "application/octet-stream": false, "image/png": false, "": false,
		"multipart/form-data; boundary=x": false, "application/jsonx": false,
	} {
		if got := isText(ct); got != want {
			t.Errorf("isText(%q) = %v; want %v", ct, got, want)
		}
	}
}
