package harness

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"
)

// handshake is PROTOCOL.md §3.1's handshake request, byte for byte.
const handshake = "OPTIONS * HTTP/1.1\r\nHost: afterburn\r\nAfterBurn-Handshake: 1\r\nContent-Length: 0\r\n\r\n"

// ColdStart is spawn-to-handshake-passed, with and without the library, in milliseconds.
type ColdStart struct {
	WithLibraryMs    Spread `json:"with_library_ms"`
	WithoutLibraryMs Spread `json:"without_library_ms"`
	// LibraryCostMs is the difference of the medians: what the library adds.
	LibraryCostMs float64 `json:"library_cost_ms"`
}

func measureColdStart(root string, lang Language, reps int) (*ColdStart, error) {
	var with, without []float64
	// Alternate the two so drift on a shared machine hits both alike.
	for i := 0; i < reps; i++ {
		d, err := spawnToHandshake(root, lang.AfterBurn)
		if err != nil {
			return nil, fmt.Errorf("%s cold start with library: %v", lang.Name, err)
		}
		with = append(with, d)
		d, err = spawnToHandshake(root, lang.NoLib)
		if err != nil {
			return nil, fmt.Errorf("%s cold start without library: %v", lang.Name, err)
		}
		without = append(without, d)
	}
	cs := &ColdStart{WithLibraryMs: spreadOf(with), WithoutLibraryMs: spreadOf(without)}
	cs.LibraryCostMs = cs.WithLibraryMs.Median - cs.WithoutLibraryMs.Median
	return cs, nil
}

// spawnToHandshake starts argv the way the watchdog does in fd mode (PROTOCOL.md §2.2) and
// returns the milliseconds from the start of the exec to the end of the handshake reply.
func spawnToHandshake(root string, argv []string) (float64, error) {
	reqR, reqW, err := os.Pipe()
	if err != nil {
		return 0, err
	}
	respR, respW, err := os.Pipe()
	if err != nil {
		return 0, err
	}
	path, err := exec.LookPath(argv[0])
	if err != nil && filepath.Base(argv[0]) != argv[0] {
		path = filepath.Join(root, argv[0])
	} else if err != nil {
		return 0, err
	}
	var stderr bytes.Buffer
	cmd := exec.Command(path, argv[1:]...)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "AFTERBURN_PROTOCOL=1", "AFTERBURN_FDS=3,4", "AFTERBURN_WORKER_ID=1",
		"AFTERBURN_MAX_HEADER_BYTES=32768", "AFTERBURN_MAX_BODY_BYTES=67108864")
	cmd.Stderr = &stderr
	cmd.ExtraFiles = []*os.File{reqR, respW}
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return 0, err
	}
	reqR.Close()
	respW.Close()
	defer func() {
		reqW.Close() // EOF between requests: the worker exits (PROTOCOL.md §9.4)
		done := make(chan struct{})
		go func() { io.Copy(io.Discard, respR); cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			cmd.Process.Kill()
			<-done
		}
		respR.Close()
	}()
	if _, err := reqW.Write([]byte(handshake)); err != nil {
		return 0, err
	}
	var got []byte
	buf := make([]byte, 4096)
	respR.SetReadDeadline(time.Now().Add(30 * time.Second))
	for !bytes.Contains(got, []byte("\r\n\r\n")) {
		n, err := respR.Read(buf)
		got = append(got, buf[:n]...)
		if err != nil {
			return 0, fmt.Errorf("reading the handshake reply: %v (got %q)\n%s", err, got, stderr.String())
		}
	}
	elapsed := time.Since(start)
	if !bytes.HasPrefix(got, []byte("HTTP/1.1 200 ")) {
		return 0, fmt.Errorf("handshake reply %q\n%s", got, stderr.String())
	}
	return float64(elapsed.Microseconds()) / 1000, nil
}
