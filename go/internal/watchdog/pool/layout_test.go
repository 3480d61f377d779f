package pool

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/afterburn-dev/afterburn/go/internal/watchdog/worker"
)

// stateFields are the fields that only state.go's workerTo and laneTo may
// assign: a worker's and a lane's state, the counts that follow from them,
// and the idle list (which holds exactly the idle workers).
var stateFields = map[string]bool{"state": true, "busy": true, "draining": true, "idle": true}

// TestStateHasOneOwner fails when a file of the package other than state.go
// assigns a state field, or changes one with ++ or --. The one other state
// is a slot's, as /_/ready shows it, which setSlotLocked alone sets.
func TestStateHasOneOwner(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	checked := 0
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") || name == "state.go" {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		checked++
		for _, d := range f.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || fn.Body == nil {
				continue
			}
			check := func(lhs ast.Expr) {
				sel, ok := lhs.(*ast.SelectorExpr)
				if !ok || !stateFields[sel.Sel.Name] {
					return
				}
				if fn.Name.Name == "setSlotLocked" && sel.Sel.Name == "state" {
					return
				}
				t.Errorf("%s: %s assigns %s: only state.go's transitions may", fset.Position(sel.Pos()), fn.Name.Name, sel.Sel.Name)
			}
			ast.Inspect(fn.Body, func(n ast.Node) bool {
				switch s := n.(type) {
				case *ast.AssignStmt:
					for _, lhs := range s.Lhs {
						check(lhs)
					}
				case *ast.IncDecStmt:
					check(s.X)
				}
				return true
			})
		}
	}
	if checked < 8 {
		t.Fatalf("checked %d files; the package has more", checked)
	}
}

// TestWorkerHasNoPoolState: the worker package is the process and its
// pipes; where a worker or lane is in the pool lives here (Member, Lease).
func TestWorkerHasNoPoolState(t *testing.T) {
	for _, typ := range []reflect.Type{reflect.TypeFor[worker.Worker](), reflect.TypeFor[worker.Lane]()} {
		for i := range typ.NumField() {
			if name := strings.ToLower(typ.Field(i).Name); stateFields[name] {
				t.Errorf("worker.%s has a field %s: pool state belongs to package pool", typ.Name(), typ.Field(i).Name)
			}
		}
	}
}
