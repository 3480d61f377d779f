package spawn

import (
	"fmt"
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
// (TMPDIR), made before the fork and removed once the worker and its
// process group are dead; EOF on its request pipe after the exchange, then
// isolation_grace to exit before its group is killed; and a report of the
// processes its request left behind, which are killed.

// Isolation is the pool's state for isolation=request; nil otherwise.
type Isolation struct {
	log  *obs.Logger
	m    *obs.Metrics
	Root string // holds the workers' temporary directories; removed at shutdown
	seq  atomic.Uint64
}

// isolated is a worker's part of isolation=request: its temporary directory.
type isolated struct {
	iso    *Isolation
	tmpdir string
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
// and the removal of tmpdir once it is reaped (§2.7).
func (iso *Isolation) Watch(w *worker.Worker, tmpdir string) {
	w.Leftovers = iso.exited
	w.Cleanup = func() { iso.removeTempDir(tmpdir) }
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
