package watchdog

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// PROTOCOL.md §2.2: a descriptor the watchdog inherited without
// close-on-exec never reaches a worker.
func TestWorkersInheritNoStrayDescriptor(t *testing.T) {
	marker := filepath.Join(t.TempDir(), "inherited-marker")
	// Opened the way a shell passes one on: without O_CLOEXEC.
	fd, err := syscall.Open(marker, syscall.O_CREAT|syscall.O_RDWR, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(fd)
	h := start(t, nil)
	resp, body := h.Get("/fds")
	if resp.StatusCode != 200 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	if strings.Contains(body, marker) {
		t.Fatalf("the worker holds the watchdog's inherited descriptor %d (%s); its fds:\n%s", fd, marker, body)
	}
	if _, err := os.Stat(marker); err != nil {
		t.Fatal(err)
	}
}
