//go:build !linux

package exchange

import (
	"errors"
	"syscall"
)

// Off Linux there is no splice(2): newSplicePipe fails, so hijack (hijack.go)
// leaves every request on net/http's path and move is never called.
type splicePipe struct{}

func newSplicePipe() (*splicePipe, error) { return nil, errors.ErrUnsupported }

func (p *splicePipe) Close() {}

func (p *splicePipe) move(dst, src syscall.RawConn, n int64) (read, written int64, rerr, werr error) {
	return 0, 0, errors.ErrUnsupported, nil
}
