package watchdog

import (
	"bytes"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

const modulePath = "github.com/afterburn-dev/afterburn/go/internal/watchdog"

// layers are the watchdog's packages, bottom first (doc.go draws the map): a
// package imports only packages of a lower layer, never one beside or above
// it, so each can be read, tested and changed knowing only what is below.
var layers = map[string]int{
	"wire": 0, "config": 0, "proc": 0, "rawio": 0,
	"obs":    1,
	"worker": 2, "buffer": 2, "guard": 2,
	"spawn": 3, "internal/testworker": 3, "front": 3,
	"pool":     4,
	"exchange": 5,
	".":        6,
}

// TestPackagesImportDownwards reads every package's imports (its internal
// tests included) and fails on one that is not below it.
func TestPackagesImportDownwards(t *testing.T) {
	seen := 0
	err := filepath.WalkDir(".", func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") {
			return err
		}
		pkg := filepath.Dir(path)
		if strings.HasPrefix(pkg, "testdata") || strings.Contains(pkg, "/testdata") {
			return nil
		}
		rank, ok := layers[pkg]
		if !ok {
			t.Errorf("package %s is in no layer of layout_test.go (and doc.go's map)", pkg)
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		seen++
		if strings.HasSuffix(f.Name.Name, "_test") {
			return nil // an external test sits above its package: it may import it, and the test worker
		}
		for _, im := range f.Imports {
			p, _ := strconv.Unquote(im.Path.Value)
			dep, ok := strings.CutPrefix(p, modulePath+"/")
			if !ok {
				continue
			}
			if r, known := layers[dep]; !known || r >= rank {
				t.Errorf("%s imports %s: layer %d imports layer %d; only lower layers may be imported", path, dep, rank, r)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if seen == 0 {
		t.Fatal("no Go file read")
	}
	if n := len(layers) - 1; n < 8 { // the top package is not counted
		t.Errorf("%d packages below the top one; the map asks for at least 8", n)
	}
}

// TestTopPackageIsThin: the top package is Watchdog, New, Run, serving and
// the §9.3 retry; everything else has a package of its own.
func TestTopPackageIsThin(t *testing.T) {
	files, _ := filepath.Glob("*.go")
	lines := 0
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		lines += bytes.Count(b, []byte("\n"))
	}
	if lines == 0 || lines > 1000 {
		t.Errorf("the top package has %d lines of code; at most 1,000", lines)
	}
}
