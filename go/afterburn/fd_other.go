//go:build !unix

package afterburn

import (
	"os"
	"runtime"
)

// openFDs: AfterBurn workers are started with inherited pipes (PROTOCOL.md §2.2),
// which this library supports on Unix only.
func openFDs(in, out int) (*os.File, *os.File, error) {
	return nil, nil, &envErr{"afterburn: not supported on " + runtime.GOOS}
}

func openFD(env string, fd int, name string) (*os.File, error) {
	return nil, &envErr{"afterburn: not supported on " + runtime.GOOS}
}
