// Package lambda serves an AWS Lambda Go handler for HTTP events — payload format 2.0,
// as Lambda function URLs and API Gateway HTTP APIs deliver them — under AfterBurn,
// unchanged. Where the function's main calls lambda.Start of
// github.com/aws/aws-lambda-go/lambda, it imports this package instead:
//
//	import "github.com/afterburn-dev/afterburn/go/afterburn/lambda"
//
//	func main() { lambda.Start(handler) }
//
// The handler is any function aws-lambda-go's lambda.Start accepts (it is wrapped by
// that package's own lambda.NewHandler, so the signatures, the JSON decoding of the
// event and the encoding of the result are aws-lambda-go's), usually
//
//	func(ctx context.Context, req events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error)
//
// or the same with events.LambdaFunctionURLRequest and events.LambdaFunctionURLResponse.
// The shape is lambda-http of PROTOCOL.md §13, held to conformance/shapes/lambda-http.json.
//
// The event is made from the HTTP request as a function URL makes it: headers with
// lower-case names, repeated ones comma-joined; cookies split out of Cookie;
// queryStringParameters decoded, repeated names comma-joined; the body as text when its
// Content-Type is textual (§13) and base64 otherwise; requestContext.requestId the
// AfterBurn request id (afterburn.RequestID). The context is the request's, with the
// request's deadline (so a handler's time left is ctx.Deadline's), and carries a
// lambdacontext.LambdaContext whose AwsRequestID is the request id.
//
// The result becomes the response as a function URL makes it: an object with
// statusCode is {statusCode, headers, multiValueHeaders, cookies, body,
// isBase64Encoded}, cookies as Set-Cookie fields; anything else is a 200 JSON body,
// the result itself. A handler's error, a status outside 100–599 or a body that is not
// the base64 it claims to be is the handler's error: 500 with the error response of
// PROTOCOL.md §8.1 (type handler_error), logged with the request id; the worker serves on.
package lambda

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"mime"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/afterburn-dev/afterburn/go/afterburn"
	"github.com/aws/aws-lambda-go/events"
	awslambda "github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-lambda-go/lambdacontext"
)

// Start serves handler through afterburn.Serve until the watchdog stops the worker, as
// lambda.Start of aws-lambda-go serves it in Lambda. It exits the process with status 1
// (log.Fatal) if Serve fails, and returns when the worker is shut down.
func Start(handler interface{}) {
	if err := afterburn.Serve(NewHandler(handler)); err != nil {
		log.Fatal(err)
	}
}

// NewHandler returns an http.Handler that calls handler, a function lambda.Start of
// aws-lambda-go accepts, with the payload 2.0 event of every request.
func NewHandler(handler interface{}) http.Handler {
	return &adapter{h: awslambda.NewHandler(handler), requestID: afterburn.RequestID}
}

type adapter struct {
	h         awslambda.Handler
	requestID func(*http.Request) string // afterburn.RequestID; the tests' own
}

func (a *adapter) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		afterburn.Logf(r, "lambda: reading the request body: %v", err)
		return // the library answered, or the watchdog cancelled the request
	}
	id := a.requestID(r)
	payload, err := json.Marshal(Event(r, body, id, time.Now()))
	if err != nil {
		afterburn.Error(w, r, http.StatusInternalServerError, err)
		return
	}
	ctx := lambdacontext.NewContext(r.Context(), &lambdacontext.LambdaContext{AwsRequestID: id})
	out, err := a.h.Invoke(ctx, payload)
	if err != nil {
		afterburn.Error(w, r, http.StatusInternalServerError, fmt.Errorf("the handler returned an error: %w", err))
		return
	}
	if err := writeResult(w, out); err != nil {
		afterburn.Error(w, r, http.StatusInternalServerError, err)
	}
}

// Event is the payload 2.0 event of r, whose body is body, for request id at time now.
func Event(r *http.Request, body []byte, id string, now time.Time) events.APIGatewayV2HTTPRequest {
	path, rawQuery, _ := strings.Cut(r.RequestURI, "?")
	if r.RequestURI == "" { // a request made in a test, not read from the wire
		path, rawQuery = r.URL.EscapedPath(), r.URL.RawQuery
	}
	ev := events.APIGatewayV2HTTPRequest{
		Version:        "2.0",
		RouteKey:       "$default",
		RawPath:        path,
		RawQueryString: rawQuery,
		Headers:        map[string]string{},
		RequestContext: events.APIGatewayV2HTTPRequestContext{
			RouteKey:   "$default",
			AccountID:  "anonymous",
			Stage:      "$default",
			RequestID:  id,
			DomainName: r.Host,
			Time:       now.UTC().Format("02/Jan/2006:15:04:05 -0700"),
			TimeEpoch:  now.UnixMilli(),
			HTTP: events.APIGatewayV2HTTPRequestContextHTTPDescription{
				Method:    r.Method,
				Path:      r.URL.Path,
				Protocol:  r.Proto,
				SourceIP:  sourceIP(r),
				UserAgent: r.UserAgent(),
			},
		},
	}
	ev.RequestContext.DomainPrefix, _, _ = strings.Cut(r.Host, ".")
	if r.Host != "" {
		ev.Headers["host"] = r.Host
	}
	for k, vs := range r.Header {
		name := strings.ToLower(k)
		if name == "cookie" {
			for _, v := range vs {
				for _, c := range strings.Split(v, ";") {
					if c = strings.TrimSpace(c); c != "" {
						ev.Cookies = append(ev.Cookies, c)
					}
				}
			}
			continue
		}
		ev.Headers[name] = strings.Join(vs, ",")
	}
	if rawQuery != "" {
		q, _ := url.ParseQuery(rawQuery)
		ev.QueryStringParameters = make(map[string]string, len(q))
		for k, vs := range q {
			ev.QueryStringParameters[k] = strings.Join(vs, ",")
		}
	}
	if len(body) > 0 {
		if isText(r.Header.Get("Content-Type")) {
			ev.Body = string(body)
		} else {
			ev.Body, ev.IsBase64Encoded = base64.StdEncoding.EncodeToString(body), true
		}
	}
	return ev
}

// sourceIP is the client's address as the proxy in front of the watchdog passed it
// (the first X-Forwarded-For entry), else the request's remote address, if any.
func sourceIP(r *http.Request) string {
	if xff := r.Header.Get("X-Forwarded-For"); xff != "" {
		first, _, _ := strings.Cut(xff, ",")
		return strings.TrimSpace(first)
	}
	if host, _, err := net.SplitHostPort(r.RemoteAddr); err == nil {
		return host
	}
	return r.RemoteAddr
}

// isText reports whether a body of this Content-Type goes into the event as text
// (PROTOCOL.md §13); every other body is base64.
func isText(contentType string) bool {
	mt, _, err := mime.ParseMediaType(contentType)
	if err != nil {
		return false
	}
	typ, sub, _ := strings.Cut(mt, "/")
	switch {
	case typ == "text":
		return true
	case typ != "application":
		return false
	}
	switch sub {
	case "json", "xml", "x-www-form-urlencoded", "javascript":
		return true
	}
	return strings.HasSuffix(sub, "+json") || strings.HasSuffix(sub, "+xml")
}

// result is a structured payload 2.0 result. Numbers are kept as json.Number, so that
// a statusCode of 200.5 or "200" is told apart from 200.
type result struct {
	StatusCode        json.RawMessage     `json:"statusCode"`
	Headers           map[string]string   `json:"headers"`
	MultiValueHeaders map[string][]string `json:"multiValueHeaders"`
	Cookies           []string            `json:"cookies"`
	Body              *string             `json:"body"`
	IsBase64Encoded   bool                `json:"isBase64Encoded"`
}

// writeResult writes the response the handler's JSON output makes, or returns why it
// makes none.
func writeResult(w http.ResponseWriter, out []byte) error {
	out = bytes.TrimSpace(out)
	var probe map[string]json.RawMessage
	if json.Unmarshal(out, &probe) != nil || probe["statusCode"] == nil {
		// No statusCode: the whole result is a JSON body (function URLs, API Gateway).
		if !json.Valid(out) {
			return errors.New("the handler's result is not JSON")
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Length", strconv.Itoa(len(out)))
		w.Write(out)
		return nil
	}
	var res result
	if err := json.Unmarshal(out, &res); err != nil {
		return fmt.Errorf("the handler's result is not a payload 2.0 response: %v", err)
	}
	status, err := strconv.Atoi(string(res.StatusCode))
	if err != nil || status < 100 || status > 599 {
		return fmt.Errorf("the handler's result has statusCode %s, not an HTTP status", res.StatusCode)
	}
	var body []byte
	if res.Body != nil {
		body = []byte(*res.Body)
		if res.IsBase64Encoded {
			if body, err = base64.StdEncoding.DecodeString(*res.Body); err != nil {
				return fmt.Errorf("the handler's result has isBase64Encoded and a body that is not base64: %v", err)
			}
		}
	}
	h := w.Header()
	for k, v := range res.Headers {
		h.Set(k, v)
	}
	for k, vs := range res.MultiValueHeaders {
		for _, v := range vs {
			h.Add(k, v)
		}
	}
	for _, c := range res.Cookies {
		h.Add("Set-Cookie", c)
	}
	w.WriteHeader(status)
	w.Write(body)
	return nil
}
