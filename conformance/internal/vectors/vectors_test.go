package vectors

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/afterburn-dev/afterburn/conformance/internal/spec"
)

func TestSegmentLatin1(t *testing.T) {
	f, err := Parse([]byte(`{"group": "g", "vectors": [{"id": "g/a", "section": "4.2", "level": "MUST",
		"kind": "parse", "description": "d",
		"request": ["A\u0000\u00ff\r\n", {"repeat": "xy\u0080", "times": 3}, ""],
		"expect": [{"echo": {"method": "GET"}}]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	v := f.Vectors[0]
	segs := v.Segments()
	want := [][]byte{{'A', 0, 0xFF, '\r', '\n'}, bytes.Repeat([]byte{'x', 'y', 0x80}, 3), {}}
	if len(segs) != len(want) {
		t.Fatalf("got %d segments; want %d", len(segs), len(want))
	}
	for i := range want {
		if !bytes.Equal(segs[i], want[i]) {
			t.Errorf("segment %d: got %q; want %q", i, segs[i], want[i])
		}
	}
	if got := v.RequestBytes(); len(got) != 5+9 {
		t.Errorf("RequestBytes: got %d bytes; want 14", len(got))
	}
	if !v.WantsHandshake() {
		t.Error("WantsHandshake: got false; want true by default")
	}
}

// vector wraps one vector object into a file of group g.
func vector(obj string) []byte {
	return []byte(`{"group": "g", "vectors": [` + obj + `]}`)
}

const okVector = `"section": "4.2", "level": "MUST", "kind": "parse", "description": "d", "request": ["x"]`

func TestParseRejects(t *testing.T) {
	for _, tc := range []struct{ name, file, want string }{
		{"beyond latin-1", string(vector(`{"id": "g/a", "section": "4.2", "level": "MUST", "kind": "parse",
			"description": "d", "request": ["\u0100"], "expect": [{"echo": {}}]}`)), "U+0100"},
		{"repeat zero times", string(vector(`{"id": "g/a", "section": "4.2", "level": "MUST", "kind": "parse",
			"description": "d", "request": [{"repeat": "x", "times": 0}], "expect": [{"echo": {}}]}`)), "times"},
		{"unknown field", string(vector(`{"id": "g/a", ` + okVector + `, "expect": [{"echo": {}}], "extra": 1}`)), "unknown field"},
		{"id outside group", string(vector(`{"id": "h/a", ` + okVector + `, "expect": [{"echo": {}}]}`)), "group"},
		{"parse with response", string(vector(`{"id": "g/a", ` + okVector + `, "expect": [{"response": {"status": 200}}]}`)), "parse vector"},
		{"parse with eof", string(vector(`{"id": "g/a", ` + okVector + `, "expect": [{"eof": true}]}`)), "parse vector"},
		{"two kinds in one entry", string(vector(`{"id": "g/a", ` + okVector + `, "expect": [{"echo": {}, "reject": {"status": 400, "type": "bad_request"}}]}`)), "exactly one"},
		{"reject not last", string(vector(`{"id": "g/a", ` + okVector + `, "expect": [{"reject": {"status": 400, "type": "bad_request"}}, {"echo": {}}]}`)), "last"},
		{"unknown error type", string(vector(`{"id": "g/a", ` + okVector + `, "expect": [{"reject": {"status": 400, "type": "oops"}}]}`)), "§8.2"},
		{"bad level", string(vector(`{"id": "g/a", "section": "4.2", "level": "MAY", "kind": "parse", "description": "d", "request": [], "expect": [{"echo": {}}]}`)), "level"},
		{"bad section", string(vector(`{"id": "g/a", "section": "§4", "level": "MUST", "kind": "parse", "description": "d", "request": [], "expect": [{"echo": {}}]}`)), "section"},
		{"upper-case field name", string(vector(`{"id": "g/a", ` + okVector + `, "expect": [{"echo": {"headers": [["Host", "fn"]]}}]}`)), "lower-case"},
		{"field pair of three", string(vector(`{"id": "g/a", ` + okVector + `, "expect": [{"echo": {"headers": [["host", "fn", "x"]]}}]}`)), "[name, value]"},
		{"exit without eof", string(vector(`{"id": "g/a", "section": "4.2", "level": "MUST", "kind": "fixture", "description": "d", "request": [], "expect": [{"response": {}, "exit": 1}]}`)), ""},
		{"two-line description", string(vector(`{"id": "g/a", "section": "4.2", "level": "MUST", "kind": "parse", "description": "a\nb", "request": [], "expect": [{"echo": {}}]}`)), "one"},
	} {
		_, err := Parse([]byte(tc.file))
		if err == nil {
			t.Errorf("%s: got no error; want one", tc.name)
			continue
		}
		if !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got error %q; want it to mention %q", tc.name, err, tc.want)
		}
	}
}

func TestExit(t *testing.T) {
	f, err := Parse(vector(`{"id": "g/a", "section": "9.4", "level": "MUST", "kind": "fixture", "description": "d",
		"request": [], "expect": [{"eof": true, "exit": "nonzero"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	x := f.Vectors[0].Expect[0].WantExit()
	if !x.Matches(13) || x.Matches(0) {
		t.Errorf("nonzero: Matches(13)=%v Matches(0)=%v; want true, false", x.Matches(13), x.Matches(0))
	}
	if d := (&Expect{EOF: true}).WantExit(); !d.Matches(0) || d.Matches(1) {
		t.Error("default exit: want exactly 0")
	}
}

func TestLoadDirDuplicateIDs(t *testing.T) {
	dir := t.TempDir()
	a := `{"group": "a", "vectors": [{"id": "a/x", ` + okVector + `, "expect": [{"echo": {}}]}]}`
	b := `{"group": "a", "vectors": [{"id": "a/y", ` + okVector + `, "expect": [{"echo": {}}]}]}` // same group as a.json
	os.WriteFile(filepath.Join(dir, "a.json"), []byte(a), 0o644)
	os.WriteFile(filepath.Join(dir, "schema.json"), []byte(`{"not": "a vector file"}`), 0o644)
	if _, err := LoadDir(dir); err != nil {
		t.Fatalf("one file: %v", err)
	}
	os.WriteFile(filepath.Join(dir, "b.json"), []byte(b), 0o644)
	if _, err := LoadDir(dir); err == nil || !strings.Contains(err.Error(), "group") {
		t.Errorf("two files of group a: got %v; want a group error", err)
	}
	os.Remove(filepath.Join(dir, "b.json"))
	twice := `{"group": "a", "vectors": [{"id": "a/x", ` + okVector + `, "expect": [{"echo": {}}]},
		{"id": "a/x", ` + okVector + `, "expect": [{"echo": {}}]}]}`
	os.WriteFile(filepath.Join(dir, "a.json"), []byte(twice), 0o644)
	if _, err := LoadDir(dir); err == nil || !strings.Contains(err.Error(), "duplicate id") {
		t.Errorf("duplicate id a/x: got %v; want a duplicate id error", err)
	}
}

// TestRepositoryVectors loads the shared vectors and checks the rules the
// schema cannot: ids unique, sections present in spec/PROTOCOL.md.
func TestRepositoryVectors(t *testing.T) {
	files, err := LoadDir("../../vectors")
	if err != nil {
		t.Fatal(err)
	}
	secs, err := spec.Load("../../../spec/PROTOCOL.md")
	if err != nil {
		t.Skipf("spec not found: %v", err)
	}
	n := 0
	for _, f := range files {
		for _, v := range f.Vectors {
			n++
			if !secs.Has(v.Section) {
				t.Errorf("%s: section %s is not a heading of PROTOCOL.md", v.ID, v.Section)
			}
		}
	}
	if n < 40 {
		t.Errorf("got %d vectors; want at least 40", n)
	}
}
