package worker

import (
	"os"
	"time"

	"github.com/afterburn-dev/afterburn/go/internal/watchdog/obs"
)

// ForwardLogs logs the worker's stderr and stdout pipes (PROTOCOL.md §9.5)
// until they end; outR is nil in stdio mode.
func (w *Worker) ForwardLogs(log *obs.Logger, errR, outR *os.File) {
	id, pid := w.ID, w.Pid
	w.logsDone.Add(1)
	go func() {
		defer w.logsDone.Done()
		log.ForwardLines(id, pid, "stderr", errR)
		errR.Close()
	}()
	if outR != nil {
		w.logsDone.Add(1)
		go func() {
			defer w.logsDone.Done()
			log.ForwardLines(id, pid, "stdout", outR)
			outR.Close()
		}()
	}
}

// WaitLogs lets the forwarders of a dead worker's log pipes finish, briefly:
// a helper that escaped the process group may hold them open.
func WaitLogs(w *Worker) {
	done := make(chan struct{})
	go func() {
		w.logsDone.Wait()
		close(done)
	}()
	t := time.NewTimer(time.Second)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
	}
}
