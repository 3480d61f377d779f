package spawn

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"

	"github.com/afterburn-dev/afterburn/go/internal/watchdog/obs"
	"github.com/afterburn-dev/afterburn/go/internal/watchdog/proc"
	"github.com/afterburn-dev/afterburn/go/internal/watchdog/worker"
)

// Per-request isolation, PROTOCOL.md §2.7 (isolation=request): every worker
// is a fresh fork of the template that serves exactly one exchange and then
// exits. The pool's slots hold forked, handshaken spares, so the fork is off
// a request's path; a slot forks its next spare as soon as its worker has
// served, while the old one exits. The request path does not change: the
// pool hands out lanes as ever, and release ends the worker instead of
// offering its lane again (pool.release).
//
// What the watchdog adds around each worker: a private temporary directory
// (TMPDIR), removed once the worker and its process group are dead; EOF on
// its request pipe after the exchange, then isolation_grace to exit before
// its group is killed; and a report of the processes its request left
// behind, which are killed. A worker of the single fork makes its directory
// itself, in the root the template was given once, and names it in its
// handshake reply; for the double fork and exec the watchdog makes it.

// Isolation is the pool's state for isolation=request; nil otherwise.
type Isolation struct {
	log  *obs.Logger
	m    *obs.Metrics
	Root string // holds the workers' temporary directories; removed at shutdown
	seq  atomic.Uint64
}

// isolated is a process's part of isolation=request: a worker's temporary
// directory, or for the template (tmpdir "") the root.
type isolated struct {
	iso    *Isolation
	tmpdir string
}

// env is what the process is told of it (§2.3, §2.7): a worker started the
// exec way its TMPDIR; the template the root, once.
func (i *isolated) env() string {
	if i.tmpdir == "" {
		return tmpdirRootEnv + "=" + i.iso.Root
	}
	return "TMPDIR=" + i.tmpdir
}

// NewIsolation makes the directory that holds the workers' temporary
// directories, private to the watchdog's user (§2.7), in the watchdog's own
// TMPDIR.
func NewIsolation(log *obs.Logger, m *obs.Metrics) (*Isolation, error) {
	root, err := os.MkdirTemp("", "afterburn-requests-")
	if err != nil {
		return nil, fmt.Errorf("watchdog: isolation=request: the directory of the workers' temporary directories: %v", err)
	}
	return &Isolation{log: log, m: m, Root: root}, nil
}

// newTempDir makes the private temporary directory of one worker of slot.
func (iso *Isolation) newTempDir(slot int) (string, error) {
	dir := filepath.Join(iso.Root, "w"+strconv.Itoa(slot)+"-"+strconv.FormatUint(iso.seq.Add(1), 10))
	if err := os.Mkdir(dir, 0o700); err != nil {
		return "", fmt.Errorf("watchdog: a worker's temporary directory: %v", err)
	}
	return dir, nil
}

// removeTempDir removes dir and all it holds. os.RemoveAll unlinks a
// symbolic link rather than following it, and on Linux walks the tree with
// openat(O_NOFOLLOW), so a link the request left cannot lead it outside dir
// (§2.7).
func (iso *Isolation) removeTempDir(dir string) {
	if dir == "" {
		return
	}
	if syscall.Rmdir(dir) == nil {
		return // empty, as most are: one system call
	}
	if err := os.RemoveAll(dir); err != nil {
		iso.log.Errorf("could not remove a worker's temporary directory: %v", err)
	}
}

// Close removes the root at shutdown, with whatever a killed worker left.
func (iso *Isolation) Close() {
	if err := os.RemoveAll(iso.Root); err != nil {
		iso.log.Errorf("could not remove %s: %v", iso.Root, err)
	}
}

// Watch gives w isolation's exit hooks: the report of what it left behind,
// and the removal of tmpdir once it is reaped (§2.7). tmpdir "" is a worker
// of the single fork, which makes its own and names it in its handshake
// reply (ownTempDir).
func (iso *Isolation) Watch(w *worker.Worker, tmpdir string) {
	var dir atomic.Pointer[string] // set by the handshake or by exited, read after the reap
	if tmpdir != "" {
		dir.Store(&tmpdir)
	} else {
		pid := w.Pid
		w.CheckReply = func(h http.Header) error {
			d, err := iso.ownTempDir(pid, h)
			if err == nil {
				dir.CompareAndSwap(nil, &d)
			}
			return err
		}
	}
	w.Leftovers = func(w *worker.Worker) {
		iso.exited(w)
		if dir.Load() == nil {
			// Dead before naming it, it may have made it all the same: while
			// its pid is held (a zombie), no other worker's can bear its name.
			if d := iso.unnamedTempDir(w.Pid); d != "" {
				dir.CompareAndSwap(nil, &d)
			}
		}
	}
	w.Cleanup = func() {
		if d := dir.Load(); d != nil {
			iso.removeTempDir(*d)
		}
	}
}

// tmpdirRootEnv names the root in the template's environment, given once
// (§2.3, §2.7): its workers of the single fork make their directories there.
const tmpdirRootEnv = "AFTERBURN_TMPDIR_ROOT"

// tmpdirField is where a worker of the single fork names its directory in
// its handshake reply (§2.7, §3.2).
const tmpdirField = "AfterBurn-Tmpdir"

// ownTempDir is the directory a worker of the single fork named in its
// handshake reply: one name, directly in the root, starting with its pid and
// a dash (§2.7). Anything else makes the reply malformed: the watchdog will
// remove what it names, so it must be that worker's directory and nothing
// else.
func (iso *Isolation) ownTempDir(pid int, h http.Header) (string, error) {
	v := h.Values(tmpdirField)
	if len(v) != 1 {
		return "", fmt.Errorf("%d %s fields; want one naming the worker's temporary directory (§2.7)", len(v), tmpdirField)
	}
	d := v[0]
	if filepath.Dir(d) != iso.Root || filepath.Clean(d) != d || !strings.HasPrefix(filepath.Base(d), strconv.Itoa(pid)+"-") {
		return "", fmt.Errorf("%s %q is not %s/%d-... (§2.7)", tmpdirField, d, iso.Root, pid)
	}
	return d, nil
}

// unnamedTempDir finds the directory a worker of the single fork made but
// did not name (it died first), by its pid: "" when there is none.
func (iso *Isolation) unnamedTempDir(pid int) string {
	f, err := os.Open(iso.Root)
	if err != nil {
		return ""
	}
	defer f.Close()
	names, _ := f.Readdirnames(-1)
	prefix := strconv.Itoa(pid) + "-"
	for _, name := range names {
		if strings.HasPrefix(name, prefix) {
			return filepath.Join(iso.Root, name)
		}
	}
	return ""
}

// exited is called by w.wait once w has exited, still a zombie, before its
// process group is killed: what its request left behind is reported and
// killed (§2.7). Its children were re-parented to the watchdog, the child
// subreaper, when it exited; so were processes that left its group or
// session (a daemon) once their own parent exited.
func (iso *Isolation) exited(w *worker.Worker) {
	left := proc.LeftBehind(w.Pid)
	if len(left) == 0 {
		return
	}
	var names []string
	for _, lp := range left {
		names = append(names, fmt.Sprintf("pid %d (%s)", lp.Pid, lp.Comm))
		proc.KillGroupOf(lp)
	}
	iso.m.IsolationLeftovers.Add(float64(len(left)))
	iso.log.Warnf("w%d pid %d%s left %d process(es) behind: %s; killed (§2.7)",
		w.ID, w.Pid, RequestLabel(w.LastRequest.Load()), len(left), strings.Join(names, ", "))
}

// RequestLabel is " (request ID)" for a log line, or "" when none is known.
func RequestLabel(id *string) string {
	if id == nil {
		return ""
	}
	return " (request " + *id + ")"
}
