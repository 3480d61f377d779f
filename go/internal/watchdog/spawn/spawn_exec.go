package spawn

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"time"

	"github.com/afterburn-dev/afterburn/go/internal/watchdog/config"
	"github.com/afterburn-dev/afterburn/go/internal/watchdog/obs"
	"github.com/afterburn-dev/afterburn/go/internal/watchdog/proc"
	"github.com/afterburn-dev/afterburn/go/internal/watchdog/worker"
)

// execSpawner is spawn=exec (PROTOCOL.md §10.2): every worker runs the
// command from scratch, paying the function's whole initialisation.
type execSpawner struct {
	cfg *config.Config
	log *obs.Logger
	m   *obs.Metrics
	iso *Isolation // isolation=request (§2.7), where a fork fell back to exec; else nil
	// autoLanes is K under lanes=auto (§2.5): the pool's, once a worker
	// answered its offer; nil before a pool (tests), config.AutoLanes.
	autoLanes func() int
}

func (e *execSpawner) Start(slot int) (*worker.Worker, error) {
	if e.iso != nil {
		return e.startIsolated(slot)
	}
	w, err := startWorker(e.cfg, slot, e.log, nil, nil, e.lanes())
	if err == nil {
		e.m.WorkerStarts.WithLabelValues("exec").Inc()
	}
	return w, err
}

// startIsolated execs a worker under isolation=request, when no template can
// fork it: one request too, with a temporary directory of its own (§2.7).
func (e *execSpawner) startIsolated(slot int) (*worker.Worker, error) {
	dir, err := e.iso.newTempDir(slot)
	if err != nil {
		return nil, err
	}
	w, err := startWorker(e.cfg, slot, e.log, nil, &isolated{e.iso, dir}, 1)
	if err != nil {
		e.iso.removeTempDir(dir)
		return nil, err
	}
	e.m.WorkerStarts.WithLabelValues("exec").Inc()
	return w, nil
}

// lanes is the K a new worker gets (§2.5): lanes, or under lanes=auto the
// offer, as many as the first worker that answered one serves.
func (e *execSpawner) lanes() int {
	switch {
	case !e.cfg.OffersLanes():
		return max(e.cfg.Lanes, 1)
	case e.autoLanes != nil:
		return e.autoLanes()
	}
	return config.AutoLanes
}

func (e *execSpawner) Handshook(*worker.Worker, error) {}
func (e *execSpawner) Template() (string, int)         { return "", 0 }
func (e *execSpawner) Close()                          {}

// StartWorker starts one worker for slot id by running the command.
// PROTOCOL.md §2.2: fd 0 is /dev/null, fds 1 and 2 log pipes, fd 3 the
// request pipe and fd 4 the response pipe; in stdio mode the request pipe is
// fd 0 and the response pipe fd 1. A template (§2.6) also gets control as
// fd 5, named by AFTERBURN_CONTROL_FD, and slot id 0. Under isolation=request
// an exec'd worker gets its temporary directory from iso, and a template the
// root of its workers' (§2.7); else iso is nil.
func StartWorker(cfg *config.Config, id int, log *obs.Logger, control *os.File, iso *isolated) (*worker.Worker, error) {
	k := max(cfg.Lanes, 1)
	if cfg.OffersLanes() {
		k = config.AutoLanes
	}
	return startWorker(cfg, id, log, control, iso, k)
}

// startWorker is StartWorker with k lanes (§2.5), an offer under lanes=auto.
func startWorker(cfg *config.Config, id int, log *obs.Logger, control *os.File, iso *isolated, k int) (*worker.Worker, error) {
	var parent, child []*os.File // our ends, and the child's ends closed after Start
	defer func() {
		for _, f := range child {
			f.Close()
		}
	}()
	reqR, reqW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("watchdog: request pipe: %v", err)
	}
	respR, respW, err := os.Pipe()
	if err != nil {
		reqR.Close()
		reqW.Close()
		return nil, fmt.Errorf("watchdog: response pipe: %v", err)
	}
	proc.GrowPipe(reqW)
	proc.GrowPipe(respW)
	errR, errW, err := os.Pipe()
	if err != nil {
		for _, f := range []*os.File{reqR, reqW, respR, respW} {
			f.Close()
		}
		return nil, fmt.Errorf("watchdog: stderr pipe: %v", err)
	}
	// reqR stays open here too (reqUnread): see worker.unreadRequestBytes.
	parent = append(parent, reqW, reqR, respR, errR)
	child = append(child, respW, errW)

	cmd := exec.Command(cfg.Command[0], cfg.Command[1:]...)
	fds := "3,4"
	var outR *os.File
	if cfg.Stdio {
		fds = "0,1"
		cmd.Stdin, cmd.Stdout, cmd.Stderr = reqR, respW, errW
	} else {
		var outW *os.File
		outR, outW, err = os.Pipe()
		if err != nil {
			for _, f := range parent {
				f.Close()
			}
			return nil, fmt.Errorf("watchdog: stdout pipe: %v", err)
		}
		parent = append(parent, outR)
		child = append(child, outW)
		cmd.Stdout, cmd.Stderr = outW, errW // Stdin nil: /dev/null
		cmd.ExtraFiles = []*os.File{reqR, respW}
		if control != nil {
			cmd.ExtraFiles = append(cmd.ExtraFiles, control)
		}
	}
	var more *worker.ExtraLanes
	if k > 1 && !cfg.Stdio && control == nil {
		if more, err = worker.MakeLanes(k-1, 3+len(cmd.ExtraFiles), cfg.OffersLanes()); err != nil {
			for _, f := range parent {
				f.Close()
			}
			return nil, err
		}
		parent = append(parent, more.Parent...)
		child = append(child, more.Child...)
		cmd.ExtraFiles = append(cmd.ExtraFiles, more.Files...)
	}
	// PROTOCOL.md §2.3: the watchdog's environment plus these; exec keeps
	// the last of duplicate names, so ours win.
	cmd.Env = append(os.Environ(), cfg.Env...)
	cmd.Env = append(cmd.Env,
		"AFTERBURN_PROTOCOL="+worker.ProtocolVersions,
		"AFTERBURN_FDS="+fds,
		"AFTERBURN_WORKER_ID="+strconv.Itoa(id),
		"AFTERBURN_MAX_HEADER_BYTES="+strconv.Itoa(cfg.MaxHeaderBytes),
		"AFTERBURN_MAX_BODY_BYTES="+strconv.FormatInt(cfg.MaxRequestBody, 10),
		"AFTERBURN_LOG_FORMAT="+cfg.LogFormatOrText(),
	)
	if control != nil {
		cmd.Env = append(cmd.Env, "AFTERBURN_CONTROL_FD=5")
	}
	if more != nil {
		cmd.Env = append(cmd.Env, more.Env...)
	}
	if cfg.Isolation == config.IsolationRequest {
		cmd.Env = append(cmd.Env, "AFTERBURN_ISOLATION=request") // §2.3, §2.7
	}
	if iso != nil {
		cmd.Env = append(cmd.Env, iso.env())
	}
	cmd.SysProcAttr = proc.SysProcAttr()

	w := worker.New(id, reqW, reqR, respR)
	more.Give(w)
	w.Kind = "exec"
	w.Started = time.Now()
	w.Deadline = w.Started.Add(cfg.InitTimeout)
	w.Reap = func() (*os.ProcessState, error) {
		err := cmd.Wait()
		return cmd.ProcessState, err
	}
	if err := proc.StartProcess(cmd); err != nil {
		for _, f := range parent {
			f.Close()
		}
		return nil, fmt.Errorf("watchdog: start %q: %v", cfg.Command[0], err)
	}
	w.Pid = cmd.Process.Pid
	if iso != nil && control == nil {
		iso.iso.Watch(w, iso.tmpdir) // before wait reads them
	}
	w.ForwardLogs(log, errR, outR)
	go w.Wait()
	return w, nil
}
