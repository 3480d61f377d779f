package spawn

import (
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/afterburn-dev/afterburn/go/internal/watchdog/obs"
	"github.com/afterburn-dev/afterburn/go/internal/watchdog/worker"
)

func testIsolation(t *testing.T) *Isolation {
	t.Helper()
	return &Isolation{log: obs.NewLogger(io.Discard, false), m: obs.NewMetrics(nil, nil), Root: t.TempDir()}
}

func mkdirs(t *testing.T, dirs ...string) {
	t.Helper()
	for _, d := range dirs {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
}

// exitAndReap runs the hooks of w's end as its Wait does, and checks that
// mine was removed and other, another worker's, kept.
func exitAndReap(t *testing.T, w *worker.Worker, mine, other string) {
	t.Helper()
	w.Leftovers(w)
	w.Cleanup()
	if _, err := os.Lstat(mine); !os.IsNotExist(err) {
		t.Fatalf("%s after the cleanup: %v; want it removed", mine, err)
	}
	if _, err := os.Lstat(other); err != nil {
		t.Fatalf("%s, another worker's: %v; want it kept", other, err)
	}
}

// TestOwnTempDir: what a worker of the single fork may name as its temporary
// directory (§2.7): the watchdog removes it, so only a directory directly in
// the root, named after that worker's pid.
func TestOwnTempDir(t *testing.T) {
	iso := testIsolation(t)
	root := iso.Root
	for _, c := range []struct {
		fields []string
		ok     bool
	}{
		{[]string{root + "/4242-a1b2c3"}, true},
		{[]string{root + "/4242-"}, true},
		{nil, false},
		{[]string{root + "/4242-a", root + "/4242-b"}, false},
		{[]string{root + "/42-a1b2c3"}, false},    // another pid's
		{[]string{root + "/42421-a1b2c3"}, false}, // another pid's, same digits first
		{[]string{root + "/4242"}, false},
		{[]string{root + "/4242-a/b"}, false},
		{[]string{root + "/4242-a/"}, false},
		{[]string{root + "/4242-a/.."}, false},
		{[]string{root + "/../4242-a"}, false},
		{[]string{"/tmp/4242-a"}, false},
		{[]string{"4242-a"}, false},
		{[]string{""}, false},
	} {
		h := http.Header{}
		for _, f := range c.fields {
			h.Add("AfterBurn-Tmpdir", f)
		}
		got, err := iso.ownTempDir(4242, h)
		if c.ok && (err != nil || got != c.fields[0]) {
			t.Errorf("ownTempDir(4242, %q) = %q, %v; want %q", c.fields, got, err, c.fields[0])
		}
		if !c.ok && err == nil {
			t.Errorf("ownTempDir(4242, %q) = %q; want an error", c.fields, got)
		}
	}
}

// TestWatchRemovesTheNamedTempDir: the directory a worker of the single fork
// named is removed once it is reaped, and nothing else in the root.
func TestWatchRemovesTheNamedTempDir(t *testing.T) {
	iso := testIsolation(t)
	mine, other := filepath.Join(iso.Root, "4242-abc"), filepath.Join(iso.Root, "4243-abc")
	mkdirs(t, mine, other)
	os.WriteFile(filepath.Join(mine, "left"), []byte("by a request"), 0o600)
	w := &worker.Worker{ID: 1, Pid: 4242}
	iso.Watch(w, "")
	if err := w.CheckReply(http.Header{"Afterburn-Tmpdir": {mine}}); err != nil {
		t.Fatal(err)
	}
	exitAndReap(t, w, mine, other)
}

// TestWatchFindsAnUnnamedTempDir: a worker that died before its handshake
// reply named its directory leaves nothing either: it is found by its pid
// before the reap (§2.7); another pid's sharing its digits is kept.
func TestWatchFindsAnUnnamedTempDir(t *testing.T) {
	iso := testIsolation(t)
	mine, other := filepath.Join(iso.Root, "4242-xyz"), filepath.Join(iso.Root, "42421-xyz")
	mkdirs(t, mine, other)
	w := &worker.Worker{ID: 1, Pid: 4242}
	iso.Watch(w, "")
	exitAndReap(t, w, mine, other)
	// A worker that made none: nothing to remove, nothing removed.
	w = &worker.Worker{ID: 1, Pid: 777}
	iso.Watch(w, "")
	w.Leftovers(w)
	w.Cleanup()
	if names, _ := os.ReadDir(iso.Root); len(names) != 1 || !strings.HasPrefix(names[0].Name(), "42421-") {
		t.Fatalf("root holds %v; want only the other pid's", names)
	}
}
