//go:build !unix

package afterburn

import (
	"os"
	"runtime"
)

// openFDs: AfterBurn workers are started with inherited pipes (PROTOCOL.md §2.2),
// which this library supports on Unix only.
func openFDs(in, out int) (int, int, error) {
	return -1, -1, &envErr{"afterburn: not supported on " + runtime.GOOS}
}

func laneFiles(in, out int, shared bool) (*os.File, *os.File) {
	return os.NewFile(uintptr(in), "afterburn-requests"), os.NewFile(uintptr(out), "afterburn-responses")
}

func openFD(env string, fd int, name string) (*os.File, error) {
	return nil, &envErr{"afterburn: not supported on " + runtime.GOOS}
}

func onPoller(f *os.File) bool { return false }

func checkUnusedLaneFD(env string, fd int, write bool) error {
	return &envErr{"afterburn: not supported on " + runtime.GOOS}
}
