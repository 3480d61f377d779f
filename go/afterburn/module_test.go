package afterburn

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// A function that imports only this library depends on nothing outside the standard
// library and the library's own module (issue 32): `go list -m all` in such a function
// lists the two modules and nothing else. The function is a module of its own in a
// temporary directory, with a replace directive pointing at this checkout, resolved with
// the module proxy off, so nothing can be downloaded.
func TestFunctionModuleDependsOnLibraryOnly(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the go command")
	}
	lib, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	write := func(name, text string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	const libPath = "github.com/afterburn-dev/afterburn/go/afterburn"
	write("go.mod", "module example.com/fn\n\ngo 1.22\n\nrequire "+libPath+" v0.0.0\n\nreplace "+libPath+" => "+lib+"\n")
	write("main.go", `package main

import (
	"log"
	"net/http"

	"github.com/afterburn-dev/afterburn/go/afterburn"
)

func main() {
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte(afterburn.RequestID(r))) })
	if err := afterburn.Serve(h); err != nil {
		log.Fatal(err)
	}
}
`)
	gocmd := filepath.Join(runtime.GOROOT(), "bin", "go")
	run := func(args ...string) string {
		t.Helper()
		cmd := exec.Command(gocmd, args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GOWORK=off", "GOPROXY=off", "GOFLAGS=-mod=mod", "GOTOOLCHAIN=local")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	run("mod", "tidy")
	run("build", "-o", os.DevNull, ".")
	got := strings.Fields(run("list", "-m", "all"))
	want := []string{"example.com/fn", libPath, "v0.0.0", "=>", lib}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("go list -m all in a function importing only the library:\n%s\nwant only the function and %s", strings.Join(got, " "), libPath)
	}
	gomod, err := os.ReadFile("go.mod")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(gomod), "require") {
		t.Errorf("the library's go.mod requires a module:\n%s", gomod)
	}
}
