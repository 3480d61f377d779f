package spawn_test

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/afterburn-dev/afterburn/go/internal/watchdog/config"
	"github.com/afterburn-dev/afterburn/go/internal/watchdog/internal/testworker"
	"github.com/afterburn-dev/afterburn/go/internal/watchdog/obs"
	"github.com/afterburn-dev/afterburn/go/internal/watchdog/spawn"
	"github.com/afterburn-dev/afterburn/go/internal/watchdog/worker"
)

// The test binary doubles as the worker these tests start (internal/testworker).
func TestMain(m *testing.M) {
	testworker.RunIfChild()
	os.Exit(m.Run())
}

func childConfig(lanes int, env ...string) *config.Config {
	return &config.Config{
		Command:        []string{os.Args[0]},
		Env:            env,
		Lanes:          lanes,
		InitTimeout:    10 * time.Second,
		MaxHeaderBytes: 32768,
		MaxRequestBody: 1 << 20,
	}
}

// startExec starts slot id's worker the exec way and answers its handshake;
// it is killed and reaped when the test ends.
func startExec(t *testing.T, cfg *config.Config, id int) *worker.Worker {
	t.Helper()
	w, err := spawn.StartWorker(cfg, id, obs.NewLogger(io.Discard, false), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		w.Kill()
		<-w.Exited
		w.ClosePipes()
	})
	if w.Kind != "exec" || w.Pid == 0 || !w.Deadline.Equal(w.Started.Add(cfg.InitTimeout)) {
		t.Errorf("kind %q pid %d deadline %v started %v; want exec, a pid, started + init_timeout", w.Kind, w.Pid, w.Deadline, w.Started)
	}
	if ie := w.Handshake(w.Deadline, false, obs.NewLogger(io.Discard, false)); ie != nil {
		t.Fatalf("handshake: %v", ie)
	}
	return w
}

// TestExecWorkerEnvironment: an exec'd worker gets its protocol pipes as fds
// 3 and 4 and the variables of PROTOCOL.md §2.3, its slot among them.
func TestExecWorkerEnvironment(t *testing.T) {
	w := startExec(t, childConfig(1, "AFTERBURN_TEST_CHILD=1"), 3)
	l := w.First()
	l.BW.WriteString("GET /env HTTP/1.1\r\nHost: afterburn\r\nContent-Length: 0\r\n\r\n")
	if err := l.BW.Flush(); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(l.BR), nil)
	if err != nil {
		t.Fatal(err)
	}
	var env map[string]string
	if err := json.NewDecoder(resp.Body).Decode(&env); err != nil {
		t.Fatal(err)
	}
	for k, want := range map[string]string{
		"AFTERBURN_PROTOCOL": "1", "AFTERBURN_FDS": "3,4", "AFTERBURN_WORKER_ID": "3",
		"AFTERBURN_MAX_HEADER_BYTES": "32768", "AFTERBURN_MAX_BODY_BYTES": "1048576", "AFTERBURN_LOG_FORMAT": "text",
	} {
		if env[k] != want {
			t.Errorf("%s=%q; want %q (all: %v)", k, env[k], want, env)
		}
	}
	if _, ok := env["AFTERBURN_STREAM_FDS"]; ok {
		t.Errorf("AFTERBURN_STREAM_FDS given to a one-lane worker: %v", env)
	}
}

// TestExecWorkerLanes: with lanes=4 the worker gets three more pipe pairs
// and a cancel pipe, and the handshake settles how many serve: the fewer of
// those made and those the library states (§2.5).
func TestExecWorkerLanes(t *testing.T) {
	w := startExec(t, childConfig(4, "AFTERBURN_TEST_CHILD=lanes", "AFTERBURN_TEST_STREAMS=2"), 1)
	if len(w.Lanes) != 4 || w.InUse != 2 {
		t.Errorf("%d lanes made, %d in use; want 4 made, 2 in use", len(w.Lanes), w.InUse)
	}
}

// TestExecStartFailure: a command that cannot start is an error naming it,
// and no worker.
func TestExecStartFailure(t *testing.T) {
	cfg := childConfig(1)
	cfg.Command = []string{"/nonexistent/afterburn-worker"}
	w, err := spawn.StartWorker(cfg, 1, obs.NewLogger(io.Discard, false), nil, nil)
	if w != nil || err == nil || !strings.Contains(err.Error(), `start "/nonexistent/afterburn-worker"`) {
		t.Errorf("StartWorker = %v, %v; want no worker and an error naming the command", w, err)
	}
}
