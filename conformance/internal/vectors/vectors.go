// Package vectors loads the shared wire vectors of conformance/vectors/*.json
// (format: conformance/README.md, schema: vectors/schema.json) and enforces
// the rules the JSON Schema cannot express.
package vectors

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
)

// Levels and kinds of README.md "Vectors".
const (
	LevelMust   = "MUST"
	LevelShould = "SHOULD"
	KindParse   = "parse"
	KindFixture = "fixture"
)

// File is one vectors/*.json file.
type File struct {
	Group   string   `json:"group"`
	Vectors []Vector `json:"vectors"`
}

// Vector is one wire vector.
type Vector struct {
	ID               string            `json:"id"`
	Section          string            `json:"section"`
	Level            string            `json:"level"`
	Kind             string            `json:"kind"`
	Description      string            `json:"description"`
	Env              map[string]string `json:"env,omitempty"`
	Handshake        *bool             `json:"handshake,omitempty"`
	Request          []Segment         `json:"request"`
	CloseRequestPipe bool              `json:"close_request_pipe,omitempty"`
	Expect           []Expect          `json:"expect"`
}

// WantsHandshake reports whether the runner performs the handshake before
// writing Request (the default).
func (v *Vector) WantsHandshake() bool { return v.Handshake == nil || *v.Handshake }

// Segments returns the request segments as bytes, repeats expanded.
func (v *Vector) Segments() [][]byte {
	out := make([][]byte, len(v.Request))
	for i, s := range v.Request {
		out[i] = s.Bytes()
	}
	return out
}

// RequestBytes returns all segments concatenated.
func (v *Vector) RequestBytes() []byte { return bytes.Join(v.Segments(), nil) }

// Segment is a latin-1 string or {"repeat": s, "times": n}.
type Segment struct {
	Text  string // latin-1 text, one byte per character; empty for a repeat
	Times int    // 0 for a plain string
}

// Bytes decodes the segment: each character U+0000–U+00FF is one byte.
func (s Segment) Bytes() []byte {
	one := latin1(s.Text)
	if s.Times == 0 {
		return one
	}
	return bytes.Repeat(one, s.Times)
}

// String describes the segment briefly for failure messages.
func (s Segment) String() string {
	if s.Times == 0 {
		return fmt.Sprintf("%q", latin1(s.Text))
	}
	return fmt.Sprintf("{repeat %q × %d}", latin1(s.Text), s.Times)
}

func latin1(s string) []byte {
	b := make([]byte, 0, len(s))
	for _, r := range s {
		b = append(b, byte(r))
	}
	return b
}

func checkLatin1(s string) error {
	for i, r := range s {
		if r > 0xFF {
			return fmt.Errorf("character %U at byte %d is outside U+0000–U+00FF", r, i)
		}
	}
	return nil
}

// UnmarshalJSON accepts the two segment forms.
func (s *Segment) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if len(b) > 0 && b[0] == '"' {
		var text string
		if err := json.Unmarshal(b, &text); err != nil {
			return err
		}
		if err := checkLatin1(text); err != nil {
			return fmt.Errorf("segment: %v", err)
		}
		*s = Segment{Text: text}
		return nil
	}
	var r struct {
		Repeat *string `json:"repeat"`
		Times  int     `json:"times"`
	}
	if err := strictUnmarshal(b, &r); err != nil {
		return fmt.Errorf("segment: %v", err)
	}
	if r.Repeat == nil || *r.Repeat == "" || r.Times < 1 {
		return fmt.Errorf("segment: want a string or {\"repeat\": non-empty string, \"times\": N ≥ 1}, got %s", b)
	}
	if err := checkLatin1(*r.Repeat); err != nil {
		return fmt.Errorf("segment: %v", err)
	}
	*s = Segment{Text: *r.Repeat, Times: r.Times}
	return nil
}

// MarshalJSON writes the segment back in its JSON form.
func (s Segment) MarshalJSON() ([]byte, error) {
	if s.Times == 0 {
		return json.Marshal(s.Text)
	}
	return json.Marshal(map[string]any{"repeat": s.Text, "times": s.Times})
}

// Fields is a field list: [name, value] pairs, names lower-case.
type Fields [][2]string

// UnmarshalJSON requires every pair to have exactly two strings.
func (f *Fields) UnmarshalJSON(b []byte) error {
	var raw [][]string
	if err := json.Unmarshal(b, &raw); err != nil {
		return fmt.Errorf("field list: %v", err)
	}
	out := make(Fields, len(raw))
	for i, p := range raw {
		if len(p) != 2 {
			return fmt.Errorf("field list: entry %d has %d strings, want [name, value]", i, len(p))
		}
		out[i] = [2]string{p[0], p[1]}
	}
	*f = out
	return nil
}

// Expect is one entry of a vector's expect list; exactly one of Echo,
// Reject, Response and EOF is set.
type Expect struct {
	Echo          *Echo     `json:"echo,omitempty"`
	AbsentHeaders []string  `json:"absent_headers,omitempty"` // only with Echo
	Reject        *Reject   `json:"reject,omitempty"`
	Response      *Response `json:"response,omitempty"`
	EOF           bool      `json:"eof,omitempty"`
	Exit          *Exit     `json:"exit,omitempty"` // only with EOF
}

// Kind names the entry: "echo", "reject", "response" or "eof".
func (e *Expect) Kind() string {
	switch {
	case e.Echo != nil:
		return "echo"
	case e.Reject != nil:
		return "reject"
	case e.Response != nil:
		return "response"
	case e.EOF:
		return "eof"
	}
	return ""
}

// Echo holds the echo fields a response must contain; nil means not compared.
type Echo struct {
	Method    *string `json:"method,omitempty"`
	Path      *string `json:"path,omitempty"`
	Query     *string `json:"query,omitempty"`
	Headers   Fields  `json:"headers,omitempty"`
	Trailers  Fields  `json:"trailers,omitempty"`
	BodyB64   *string `json:"body_b64,omitempty"`
	BodyLen   *int64  `json:"body_len,omitempty"`
	RequestID *string `json:"request_id,omitempty"`
}

// Reject is a framing error answer (§8.8).
type Reject struct {
	Status  int    `json:"status"`
	Type    string `json:"type"`
	Headers Fields `json:"headers,omitempty"`
}

// Response is the general response check.
type Response struct {
	Status        *int                  `json:"status,omitempty"`
	Headers       Fields                `json:"headers,omitempty"`
	AbsentHeaders []string              `json:"absent_headers,omitempty"`
	Lists         Fields                `json:"lists,omitempty"`
	BodyB64       *string               `json:"body_b64,omitempty"`
	BodyLen       *int64                `json:"body_len,omitempty"`
	JSON          map[string]any        `json:"json,omitempty"`
	JSONRange     map[string][2]float64 `json:"json_range,omitempty"`
	Chunked       *bool                 `json:"chunked,omitempty"`
	NoBody        bool                  `json:"no_body,omitempty"`
	Incomplete    bool                  `json:"incomplete,omitempty"`
}

// Exit is the exit status an eof entry expects: a code, or any non-zero.
type Exit struct {
	Code    int
	NonZero bool
}

// UnmarshalJSON accepts an integer or "nonzero".
func (x *Exit) UnmarshalJSON(b []byte) error {
	if string(bytes.TrimSpace(b)) == `"nonzero"` {
		*x = Exit{NonZero: true}
		return nil
	}
	var n int
	if err := json.Unmarshal(b, &n); err != nil || n < 0 || n > 255 {
		return fmt.Errorf(`exit: want 0–255 or "nonzero", got %s`, b)
	}
	*x = Exit{Code: n}
	return nil
}

// MarshalJSON writes the exit back in its JSON form.
func (x Exit) MarshalJSON() ([]byte, error) {
	if x.NonZero {
		return []byte(`"nonzero"`), nil
	}
	return json.Marshal(x.Code)
}

// String is "0", "13" or "non-zero".
func (x Exit) String() string {
	if x.NonZero {
		return "non-zero"
	}
	return fmt.Sprint(x.Code)
}

// Matches reports whether a process exit code satisfies x.
func (x Exit) Matches(code int) bool {
	if x.NonZero {
		return code != 0
	}
	return code == x.Code
}

// WantExit returns the exit status an eof entry expects (default 0).
func (e *Expect) WantExit() Exit {
	if e.Exit == nil {
		return Exit{}
	}
	return *e.Exit
}

var (
	namePattern  = regexp.MustCompile(`^[a-z0-9][a-z0-9-]*$`)
	idPattern    = regexp.MustCompile(`^([a-z0-9][a-z0-9-]*)/[a-z0-9][a-z0-9-]*$`)
	sectPattern  = regexp.MustCompile(`^[1-9][0-9]*(\.[1-9][0-9]*)?$`)
	fieldPattern = regexp.MustCompile("^[!#$%&'*+.^_`|~0-9a-z-]+$")
	errorTypes   = map[string]bool{
		"bad_request": true, "headers_too_large": true, "body_too_large": true,
		"not_implemented": true, "overloaded": true, "unavailable": true,
		"handler_error": true, "worker_crashed": true, "bad_response": true,
		"timeout": true, "request_timeout": true, "version_mismatch": true,
	}
)

// Parse decodes one vector file and validates it on its own.
func Parse(data []byte) (*File, error) {
	var f File
	if err := strictUnmarshal(data, &f); err != nil {
		return nil, err
	}
	if !namePattern.MatchString(f.Group) {
		return nil, fmt.Errorf("group %q: want lower-case letters, digits and -", f.Group)
	}
	if len(f.Vectors) == 0 {
		return nil, fmt.Errorf("group %q: no vectors", f.Group)
	}
	for i := range f.Vectors {
		if err := f.Vectors[i].validate(f.Group); err != nil {
			return nil, err
		}
	}
	return &f, nil
}

// validate enforces README.md "Vectors" on one vector.
func (v *Vector) validate(group string) error {
	m := idPattern.FindStringSubmatch(v.ID)
	if m == nil {
		return fmt.Errorf("vector %q: id must be group/name in lower case", v.ID)
	}
	if m[1] != group {
		return fmt.Errorf("vector %s: id must start with its file's group %q", v.ID, group+"/")
	}
	bad := func(format string, args ...any) error {
		return fmt.Errorf("vector %s: %s", v.ID, fmt.Sprintf(format, args...))
	}
	switch {
	case !sectPattern.MatchString(v.Section):
		return bad("section %q is not a section number like 4.3", v.Section)
	case v.Level != LevelMust && v.Level != LevelShould:
		return bad("level %q: want MUST or SHOULD", v.Level)
	case v.Kind != KindParse && v.Kind != KindFixture:
		return bad("kind %q: want parse or fixture", v.Kind)
	case strings.TrimSpace(v.Description) == "" || strings.ContainsAny(v.Description, "\r\n"):
		return bad("description must be one non-empty line")
	case len(v.Expect) == 0:
		return bad("expect is empty")
	}
	for i := range v.Expect {
		e := &v.Expect[i]
		n := 0
		for _, set := range []bool{e.Echo != nil, e.Reject != nil, e.Response != nil, e.EOF} {
			if set {
				n++
			}
		}
		if n != 1 {
			return bad("expect[%d] must be exactly one of echo, reject, response, eof", i)
		}
		if e.AbsentHeaders != nil && e.Echo == nil {
			return bad("expect[%d]: absent_headers beside something other than echo", i)
		}
		if e.Exit != nil && !e.EOF {
			return bad("expect[%d]: exit without eof", i)
		}
		if v.Kind == KindParse && e.Echo == nil && e.Reject == nil {
			return bad("expect[%d]: a parse vector only expects echo or reject, got %s", i, e.Kind())
		}
		if (e.EOF || e.Reject != nil) && i != len(v.Expect)-1 {
			return bad("expect[%d]: %s must be the last entry", i, e.Kind())
		}
		if err := e.validateFields(); err != nil {
			return bad("expect[%d]: %v", i, err)
		}
	}
	return nil
}

func (e *Expect) validateFields() error {
	var lists []Fields
	names := e.AbsentHeaders
	switch {
	case e.Echo != nil:
		lists = append(lists, e.Echo.Headers, e.Echo.Trailers)
	case e.Reject != nil:
		if !errorTypes[e.Reject.Type] {
			return fmt.Errorf("reject type %q is not in §8.2", e.Reject.Type)
		}
		if e.Reject.Status < 400 || e.Reject.Status > 599 {
			return fmt.Errorf("reject status %d is not an error status", e.Reject.Status)
		}
		lists = append(lists, e.Reject.Headers)
	case e.Response != nil:
		lists = append(lists, e.Response.Headers)
		names = append(names, e.Response.AbsentHeaders...)
		if e.Response.NoBody && (e.Response.BodyB64 != nil || e.Response.Incomplete) {
			return fmt.Errorf("no_body with body_b64 or incomplete")
		}
	}
	for _, l := range lists {
		for _, f := range l {
			names = append(names, f[0])
		}
	}
	for _, n := range names {
		if !fieldPattern.MatchString(n) {
			return fmt.Errorf("field name %q is not a lower-case token", n)
		}
	}
	return nil
}

// LoadDir reads every *.json in dir except schema.json, in name order, and
// checks that ids are unique across files.
func LoadDir(dir string) ([]*File, error) {
	paths, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		return nil, err
	}
	sort.Strings(paths)
	var files []*File
	seen := map[string]string{}
	groups := map[string]string{}
	for _, p := range paths {
		if filepath.Base(p) == "schema.json" {
			continue
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return nil, fmt.Errorf("vectors: %v", err)
		}
		f, err := Parse(data)
		if err != nil {
			return nil, fmt.Errorf("vectors: %s: %v", p, err)
		}
		if other, dup := groups[f.Group]; dup {
			return nil, fmt.Errorf("vectors: %s: group %q already used by %s", p, f.Group, other)
		}
		groups[f.Group] = p
		for _, v := range f.Vectors {
			if other, dup := seen[v.ID]; dup {
				return nil, fmt.Errorf("vectors: %s: duplicate id %s (also in %s)", p, v.ID, other)
			}
			seen[v.ID] = p
		}
		files = append(files, f)
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("vectors: no vector files in %s", dir)
	}
	return files, nil
}

// strictUnmarshal decodes exactly one JSON value with no unknown fields,
// mirroring the schema's additionalProperties: false.
func strictUnmarshal(data []byte, v any) error {
	d := json.NewDecoder(bytes.NewReader(data))
	d.DisallowUnknownFields()
	if err := d.Decode(v); err != nil {
		return err
	}
	if d.More() {
		return fmt.Errorf("trailing data after the JSON value")
	}
	return nil
}
