// Command modproxy writes one version of a Go module into a directory laid out as a module
// proxy (https://go.dev/ref/mod#goproxy-protocol), so that GOPROXY=file://DIR serves it the
// way proxy.golang.org would serve a tagged release:
//
//	modproxy -dir go -version v0.1.0 -out /tmp/proxy
//
// writes /tmp/proxy/<escaped module path>/@v/{list,v0.1.0.info,v0.1.0.mod,v0.1.0.zip}. The
// zip is made by golang.org/x/mod/zip, the code the go command itself uses: it leaves out
// nested modules, vendor directories and VCS metadata. A release zip holds only committed
// files, so the build output directories (-exclude, default "bin") and *.test binaries are
// left out here too. `make dist-test` uses it to `go install …@VERSION` as a user would.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"golang.org/x/mod/modfile"
	"golang.org/x/mod/module"
	"golang.org/x/mod/zip"
)

func main() {
	dir := flag.String("dir", ".", "the module's root directory (holding go.mod)")
	version := flag.String("version", "", "the version to publish, e.g. v0.1.0")
	out := flag.String("out", "", "the proxy directory to write into")
	exclude := flag.String("exclude", "bin", "comma-separated top-level directories that are build output, not module content")
	flag.Parse()
	if *version == "" || *out == "" || flag.NArg() != 0 {
		fmt.Fprintln(os.Stderr, "usage: modproxy -dir MODULE_DIR -version vX.Y.Z -out PROXY_DIR [-exclude bin]")
		os.Exit(2)
	}
	if err := run(*dir, *version, *out, strings.Split(*exclude, ",")); err != nil {
		fmt.Fprintln(os.Stderr, "modproxy:", err)
		os.Exit(1)
	}
}

func run(dir, version, out string, exclude []string) error {
	gomod, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	if err != nil {
		return err
	}
	path := modfile.ModulePath(gomod)
	if path == "" {
		return fmt.Errorf("%s/go.mod: no module line", dir)
	}
	mv := module.Version{Path: path, Version: version}
	if err := module.Check(path, version); err != nil {
		return err
	}
	escaped, err := module.EscapePath(path)
	if err != nil {
		return err
	}
	vdir := filepath.Join(out, filepath.FromSlash(escaped), "@v")
	if err := os.MkdirAll(vdir, 0o755); err != nil {
		return err
	}

	files, err := moduleFiles(dir, exclude)
	if err != nil {
		return err
	}
	zf, err := os.Create(filepath.Join(vdir, version+".zip"))
	if err != nil {
		return err
	}
	if err := zip.Create(zf, mv, files); err != nil {
		zf.Close()
		return err
	}
	if err := zf.Close(); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(vdir, version+".mod"), gomod, 0o644); err != nil {
		return err
	}
	info, _ := json.Marshal(struct {
		Version string
		Time    time.Time
	}{version, time.Now().UTC().Truncate(time.Second)})
	if err := os.WriteFile(filepath.Join(vdir, version+".info"), info, 0o644); err != nil {
		return err
	}
	return addToList(filepath.Join(vdir, "list"), version)
}

// moduleFiles lists every regular file under dir but the excluded top-level directories and
// test binaries; zip.Create itself drops nested modules, vendor/ and VCS directories.
func moduleFiles(dir string, exclude []string) ([]zip.File, error) {
	var files []zip.File
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if rel != "." && !strings.Contains(rel, "/") && slices.Contains(exclude, rel) {
				return filepath.SkipDir
			}
			return nil
		}
		if d.Type().IsRegular() && !strings.HasSuffix(rel, ".test") {
			files = append(files, file{rel: rel, abs: p})
		}
		return nil
	})
	return files, err
}

func addToList(list, version string) error {
	data, err := os.ReadFile(list)
	if err != nil && !os.IsNotExist(err) {
		return err
	}
	for _, v := range strings.Fields(string(data)) {
		if v == version {
			return nil
		}
	}
	return os.WriteFile(list, append(data, version+"\n"...), 0o644)
}

type file struct{ rel, abs string }

func (f file) Path() string                 { return f.rel }
func (f file) Lstat() (os.FileInfo, error)  { return os.Lstat(f.abs) }
func (f file) Open() (io.ReadCloser, error) { return os.Open(f.abs) }
