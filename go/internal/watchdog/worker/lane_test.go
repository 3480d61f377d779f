package worker

import (
	"errors"
	"os"
	"testing"
	"time"
)

// A worker that serves one lane keeps no cancel pipe: SettleLanes closes
// the write end made for an offer (lanes=auto) or a lanes=K the library
// did not take up, which would otherwise stay open for the worker's life.
func TestSettleLanesClosesAnUnusedCancelPipe(t *testing.T) {
	r, wr, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	w := &Worker{InUse: 1, cancelW: wr, Lanes: []*Lane{{}}}
	w.SettleLanes()
	if w.cancelW != nil {
		t.Fatal("the cancel pipe is still the worker's after SettleLanes with one lane")
	}
	if _, err := wr.Write([]byte("x")); err == nil {
		t.Error("the cancel pipe's write end is still open")
	}
}

// SetDeadlines leaves the pipes' deadlines alone when asked for the ones
// already there, but never after Wake changed them from another goroutine:
// the next exchange of a lane woken by a cancellation gets its own deadline
// back, not the past one Wake left.
func TestSetDeadlinesAfterWake(t *testing.T) {
	l, _, respW := lanePair(t)
	later := time.Now().Add(time.Hour)
	l.SetDeadlines(later, later)
	l.Wake()
	l.SetDeadlines(later, later) // the same deadline: put back, not skipped
	go func() {
		time.Sleep(20 * time.Millisecond)
		respW.Write([]byte("x"))
	}()
	if _, err := l.BR.ReadByte(); err != nil {
		t.Fatalf("read after Wake and SetDeadlines of a later deadline: %v; want the byte written", err)
	}
	// And a deadline that is there already holds: a read past it times out.
	soon := time.Now().Add(20 * time.Millisecond)
	l.SetDeadlines(soon, soon)
	l.SetDeadlines(soon, soon)
	if _, err := l.BR.ReadByte(); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("read past the deadline = %v; want os.ErrDeadlineExceeded", err)
	}
}

// lanePair makes a lane over real pipes, and the worker's ends.
func lanePair(t *testing.T) (l *Lane, reqR *os.File, respW *os.File) {
	t.Helper()
	reqR, reqW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	respR, respW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, f := range []*os.File{reqR, reqW, respR, respW} {
			f.Close()
		}
	})
	return newLane(&Worker{}, 1, reqW, reqR, respR), reqR, respW
}
