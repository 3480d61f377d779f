// Package expect matches responses against the expect entries of the wire
// vectors (conformance/README.md "Vectors", "Field lists", "Echo format").
// It does no I/O: the wire layer and the e2e layer read responses and hand
// them over as Response values.
package expect

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"mime"
	"net/http"
	"reflect"
	"sort"
	"strings"

	"github.com/afterburn-dev/afterburn/conformance/internal/vectors"
)

// Response is one response as read from a response pipe or a socket.
type Response struct {
	Status     int
	Header     vectors.Fields // names lower-case; the order of each name's values kept
	Body       []byte         // what was read, possibly cut short
	Chunked    bool           // framed by Transfer-Encoding: chunked
	Incomplete bool           // the body ended before its framing said it would
}

// FromHTTP converts a net/http response whose body was read into body;
// bodyErr is the error reading it returned, if any.
func FromHTTP(r *http.Response, body []byte, bodyErr error) *Response {
	return &Response{
		Status:     r.StatusCode,
		Header:     HeaderFields(r.Header),
		Body:       body,
		Chunked:    len(r.TransferEncoding) > 0 && strings.EqualFold(r.TransferEncoding[len(r.TransferEncoding)-1], "chunked"),
		Incomplete: bodyErr != nil,
	}
}

// HeaderFields turns an http.Header into a field list sorted by name; the
// values of one name keep their order. net/http removes Transfer-Encoding
// from the map; it is reported through Response.Chunked instead.
func HeaderFields(h http.Header) vectors.Fields {
	names := make([]string, 0, len(h))
	for n := range h {
		names = append(names, n)
	}
	sort.Strings(names)
	var out vectors.Fields
	for _, n := range names {
		for _, v := range h[n] {
			out = append(out, [2]string{strings.ToLower(n), v})
		}
	}
	return out
}

// Mismatch is a failed comparison: what was compared, got and want.
type Mismatch struct {
	What      string
	Got, Want any
}

func (m *Mismatch) Error() string {
	return fmt.Sprintf("%s: got %s; want %s", m.What, show(m.Got), show(m.Want))
}

func show(v any) string {
	switch v := v.(type) {
	case string:
		return fmt.Sprintf("%q", v)
	case []byte:
		return fmt.Sprintf("%q", v)
	case nil:
		return "nothing"
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

func mismatch(what string, got, want any) error { return &Mismatch{What: what, Got: got, Want: want} }

// Fields matches a field list per name (README.md "Field lists"): for every
// name want mentions, the values of that name in got, in order, must equal
// the values of that name in want. An empty, non-nil want means got must be
// empty. what names the list in the error.
func Fields(what string, want, got vectors.Fields) error {
	if want == nil {
		return nil
	}
	if len(want) == 0 {
		if len(got) != 0 {
			return mismatch(what, got, want)
		}
		return nil
	}
	var order []string
	wantBy := map[string][]string{}
	for _, f := range want {
		n := strings.ToLower(f[0])
		if _, ok := wantBy[n]; !ok {
			order = append(order, n)
		}
		wantBy[n] = append(wantBy[n], f[1])
	}
	gotBy := map[string][]string{}
	for _, f := range got {
		n := strings.ToLower(f[0])
		gotBy[n] = append(gotBy[n], f[1])
	}
	for _, n := range order {
		if !reflect.DeepEqual(gotBy[n], wantBy[n]) {
			g := gotBy[n]
			if g == nil {
				g = []string{}
			}
			return mismatch(fmt.Sprintf("%s %q (values in order)", what, n), g, wantBy[n])
		}
	}
	return nil
}

// Lists matches fields whose value is a comma-separated list (README.md
// "Field lists"): for every [name, member] of want, got has exactly one
// field of that name and member is one of its members, whitespace around
// each ignored. A list is a set: a library may list more (§3.2).
func Lists(what string, want, got vectors.Fields) error {
	for _, w := range want {
		var values []string
		for _, f := range got {
			if strings.EqualFold(f[0], w[0]) {
				values = append(values, f[1])
			}
		}
		if len(values) != 1 {
			return mismatch(fmt.Sprintf("%s %q (one field, a list holding %q)", what, w[0], w[1]), values, w[1])
		}
		found := false
		for _, m := range strings.Split(values[0], ",") {
			if strings.TrimSpace(m) == w[1] {
				found = true
			}
		}
		if !found {
			return mismatch(fmt.Sprintf("%s %q (a list holding %q)", what, w[0], w[1]), values[0], w[1])
		}
	}
	return nil
}

// Absent fails when any of names appears in got.
func Absent(what string, names []string, got vectors.Fields) error {
	for _, n := range names {
		for _, f := range got {
			if strings.EqualFold(f[0], n) {
				return mismatch(fmt.Sprintf("%s %q", what, n), f[1], "absent")
			}
		}
	}
	return nil
}

// EchoBody is the fixture's echo JSON (README.md "Echo format").
type EchoBody struct {
	Method    *string    `json:"method"`
	Path      *string    `json:"path"`
	Query     *string    `json:"query"`
	Headers   [][]string `json:"headers"`
	Trailers  [][]string `json:"trailers"`
	BodyB64   *string    `json:"body_b64"`
	BodyLen   *int64     `json:"body_len"`
	RequestID *string    `json:"request_id"`
}

// ParseEcho decodes an echo body.
func ParseEcho(body []byte) (*EchoBody, error) {
	var e EchoBody
	if err := json.Unmarshal(body, &e); err != nil {
		return nil, fmt.Errorf("echo body is not the echo JSON: %v: %q", err, clip(body, 300))
	}
	return &e, nil
}

func toFields(what string, raw [][]string) (vectors.Fields, error) {
	out := make(vectors.Fields, 0, len(raw))
	for _, p := range raw {
		if len(p) != 2 {
			return nil, fmt.Errorf("echo %s: entry %q is not [name, value]", what, p)
		}
		out = append(out, [2]string{p[0], p[1]})
	}
	return out, nil
}

// Echo checks a 200 echo response against want and absent header names.
func Echo(want *vectors.Echo, absent []string, r *Response) error {
	if r.Incomplete {
		return fmt.Errorf("echo response body incomplete after %d bytes", len(r.Body))
	}
	if r.Status != 200 {
		return mismatch("echo status", r.Status, 200)
	}
	e, err := ParseEcho(r.Body)
	if err != nil {
		return err
	}
	str := func(what string, got, want *string) error {
		if want == nil {
			return nil
		}
		if got == nil {
			return mismatch("echo "+what, nil, *want)
		}
		if *got != *want {
			return mismatch("echo "+what, *got, *want)
		}
		return nil
	}
	if err := str("method", e.Method, want.Method); err != nil {
		return err
	}
	if err := str("path", e.Path, want.Path); err != nil {
		return err
	}
	if err := str("query", e.Query, want.Query); err != nil {
		return err
	}
	if err := str("request_id", e.RequestID, want.RequestID); err != nil {
		return err
	}
	if want.BodyLen != nil {
		if e.BodyLen == nil {
			return mismatch("echo body_len", nil, *want.BodyLen)
		}
		if *e.BodyLen != *want.BodyLen {
			return mismatch("echo body_len", *e.BodyLen, *want.BodyLen)
		}
	}
	if want.BodyB64 != nil {
		if e.BodyB64 == nil {
			return mismatch("echo body_b64", nil, *want.BodyB64)
		}
		got, err := base64.StdEncoding.DecodeString(*e.BodyB64)
		if err != nil {
			return fmt.Errorf("echo body_b64 is not base64: %v", err)
		}
		w, _ := base64.StdEncoding.DecodeString(*want.BodyB64)
		if !bytes.Equal(got, w) {
			return mismatch("echo body (decoded body_b64)", clip(got, 200), clip(w, 200))
		}
	}
	if want.Headers != nil || absent != nil {
		if e.Headers == nil {
			return mismatch("echo headers", nil, want.Headers)
		}
		h, err := toFields("headers", e.Headers)
		if err != nil {
			return err
		}
		if err := Fields("echo header", want.Headers, h); err != nil {
			return err
		}
		if err := Absent("echo header", absent, h); err != nil {
			return err
		}
	}
	if want.Trailers != nil {
		if e.Trailers == nil {
			return mismatch("echo trailers", nil, want.Trailers)
		}
		tr, err := toFields("trailers", e.Trailers)
		if err != nil {
			return err
		}
		if err := Fields("echo trailer", want.Trailers, tr); err != nil {
			return err
		}
	}
	return nil
}

// ErrorBody is the §8.1 error body.
type ErrorBody struct {
	Type      string `json:"type"`
	Message   string `json:"message"`
	RequestID string `json:"request_id"`
}

// ErrorResponse checks the §8.1 error response of type typ and status:
// the status, Content-Type: application/json and the JSON body's type.
// It does not look at AfterBurn-Error, which some callers check apart.
func ErrorResponse(status int, typ string, r *Response) (*ErrorBody, error) {
	if r.Status != status {
		return nil, mismatch("status", r.Status, status)
	}
	if r.Incomplete {
		return nil, fmt.Errorf("error body incomplete after %d bytes: %q", len(r.Body), clip(r.Body, 200))
	}
	ct := first(r.Header, "content-type")
	if mt, _, err := mime.ParseMediaType(ct); err != nil || mt != "application/json" {
		return nil, mismatch("content-type of the §8.1 error response", ct, "application/json")
	}
	var eb ErrorBody
	if err := json.Unmarshal(r.Body, &eb); err != nil {
		return nil, fmt.Errorf("§8.1 error body is not JSON: %v: %q", err, clip(r.Body, 300))
	}
	if eb.Type != typ {
		return nil, mismatch("§8.1 error body type", eb.Type, typ)
	}
	if eb.Message == "" {
		return nil, mismatch("§8.1 error body message", "", "a sentence")
	}
	return &eb, nil
}

// Reject checks the response part of a reject entry; the caller checks the
// EOF and the exit status that must follow.
func Reject(want *vectors.Reject, r *Response) error {
	if _, err := ErrorResponse(want.Status, want.Type, r); err != nil {
		return err
	}
	return Fields("header", want.Headers, r.Header)
}

// Check applies a general response entry.
func Check(want *vectors.Response, r *Response) error {
	if want.Status != nil && r.Status != *want.Status {
		return mismatch("status", r.Status, *want.Status)
	}
	if want.Incomplete != r.Incomplete {
		if r.Incomplete {
			return fmt.Errorf("body incomplete after %d bytes: %q", len(r.Body), clip(r.Body, 200))
		}
		return mismatch("body", "complete", "incomplete (cut short, §8.3)")
	}
	if want.NoBody && len(r.Body) != 0 {
		return mismatch("body", clip(r.Body, 200), "none")
	}
	if want.Chunked != nil && r.Chunked != *want.Chunked {
		return mismatch("framed by chunked", r.Chunked, *want.Chunked)
	}
	if err := Fields("header", want.Headers, r.Header); err != nil {
		return err
	}
	if err := Absent("header", want.AbsentHeaders, r.Header); err != nil {
		return err
	}
	if err := Lists("header", want.Lists, r.Header); err != nil {
		return err
	}
	if want.BodyLen != nil && int64(len(r.Body)) != *want.BodyLen {
		return mismatch("body length", len(r.Body), *want.BodyLen)
	}
	if want.BodyB64 != nil {
		w, _ := base64.StdEncoding.DecodeString(*want.BodyB64)
		if !bytes.Equal(r.Body, w) {
			return mismatch("body", clip(r.Body, 200), clip(w, 200))
		}
	}
	if want.JSON != nil || want.JSONRange != nil {
		var got map[string]any
		if err := json.Unmarshal(r.Body, &got); err != nil {
			return fmt.Errorf("body is not a JSON object: %v: %q", err, clip(r.Body, 300))
		}
		if err := JSONFields(want.JSON, got); err != nil {
			return err
		}
		for k, rng := range want.JSONRange {
			n, ok := got[k].(float64)
			if !ok {
				return mismatch("JSON field "+k, got[k], fmt.Sprintf("a number in [%v, %v]", rng[0], rng[1]))
			}
			if n < rng[0] || n > rng[1] {
				return mismatch("JSON field "+k, n, fmt.Sprintf("a number in [%v, %v]", rng[0], rng[1]))
			}
		}
	}
	return nil
}

// JSONFields checks that got holds every field of want with an equal JSON
// value (numbers compared as float64).
func JSONFields(want, got map[string]any) error {
	keys := make([]string, 0, len(want))
	for k := range want {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		g, ok := got[k]
		if !ok {
			return mismatch("JSON field "+k, nil, want[k])
		}
		if !reflect.DeepEqual(normalise(g), normalise(want[k])) {
			return mismatch("JSON field "+k, g, want[k])
		}
	}
	return nil
}

// normalise round-trips v through JSON so that numbers are float64 however
// the caller built them.
func normalise(v any) any {
	b, err := json.Marshal(v)
	if err != nil {
		return v
	}
	var out any
	json.Unmarshal(b, &out)
	return out
}

// First returns the first value of name in f, or "".
func First(f vectors.Fields, name string) string { return first(f, name) }

func first(f vectors.Fields, name string) string {
	for _, p := range f {
		if strings.EqualFold(p[0], name) {
			return p[1]
		}
	}
	return ""
}

func clip(b []byte, n int) []byte {
	if len(b) <= n {
		return b
	}
	out := append([]byte{}, b[:n]...)
	return append(out, fmt.Sprintf("… (%d bytes in all)", len(b))...)
}
