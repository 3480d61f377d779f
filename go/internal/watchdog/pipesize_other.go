//go:build !linux

package watchdog

import "os"

// growPipe leaves the pipe's buffer as it is off Linux.
func growPipe(*os.File) {}
