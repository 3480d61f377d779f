package buffer

import (
	"errors"
	"os"
	"sync/atomic"
)

// SpillBudget caps the bytes that buffered bodies hold in temporary files
// at once, across every request (buffer_spill_max, PROTOCOL.md §6.6), so
// that clients cannot fill the disk through the watchdog.
type SpillBudget struct {
	Max  int64 // 0: no file may be used
	Used atomic.Int64
}

// errSpillFull is a body that would take the spilled bytes past the cap.
var errSpillFull = errors.New("watchdog: buffer_spill_max reached")

// reserve takes n bytes of the budget, or reports that they are not there.
func (b *SpillBudget) reserve(n int64) bool {
	for {
		used := b.Used.Load()
		if used+n > b.Max {
			return false
		}
		if b.Used.CompareAndSwap(used, used+n) {
			return true
		}
	}
}

func (b *SpillBudget) Release(n int64) { b.Used.Add(-n) }

// spillFile is an anonymous temporary file in dir for buffered bodies and
// responses: its name is removed as soon as it is made, and the space goes
// when it is closed or when the watchdog dies, so nothing is left behind.
func spillFile(dir string) (*os.File, error) {
	f, err := os.CreateTemp(dir, "afterburn-spill-*")
	if err != nil {
		return nil, err
	}
	if err := os.Remove(f.Name()); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}
