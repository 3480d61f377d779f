package rawio

import (
	"errors"
	"os"
	"testing"
	"time"
)

// The answer written inside ask wakes the wait at once: AwaitAfter returns
// well before the read deadline, and the Read after it finds the answer.
// ask sleeps after the answer came, so that the runtime's poller learns of
// it before ask returns: a wait begun only then would forget it and sleep
// to the deadline (the lost wake-up AwaitAfter exists to avoid).
func TestAwaitAfterSeesAnAnswerThatCameDuringTheQuestion(t *testing.T) {
	r, rf, _, wf := pipeFDs(t)
	r.SetReadDeadline(time.Now().Add(10 * time.Second))
	start := time.Now()
	err := rf.AwaitAfter(func() (bool, error) {
		wf.Write([]byte("answer"))
		time.Sleep(20 * time.Millisecond)
		return false, nil
	})
	if err != nil {
		t.Fatalf("AwaitAfter: %v", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("AwaitAfter took %v: the answer written during ask did not wake the wait", d)
	}
	rf.WatchLook()
	buf := make([]byte, 16)
	if n, err := rf.Read(buf); err != nil || string(buf[:n]) != "answer" {
		t.Fatalf("Read after AwaitAfter = %q, %v", buf[:n], err)
	}
	if l := rf.TakeLook(); l != LookFound {
		t.Fatalf("the read after the wait found %v; want LookFound", l)
	}
}

// Without lookNow, AwaitAfter returns only once the descriptor is readable:
// the Read after it finds the answer with its first read(2), never an
// EAGAIN (LookEmpty).
func TestAwaitAfterWaitsForALaterAnswer(t *testing.T) {
	_, rf, wf, _ := pipeFDs(t)
	const delay = 30 * time.Millisecond
	start := time.Now()
	err := rf.AwaitAfter(func() (bool, error) {
		go func() {
			time.Sleep(delay)
			wf.Write([]byte("later"))
		}()
		return false, nil
	})
	if err != nil {
		t.Fatalf("AwaitAfter: %v", err)
	}
	if d := time.Since(start); d < delay {
		t.Fatalf("AwaitAfter returned after %v, before the answer came (%v)", d, delay)
	}
	rf.WatchLook()
	buf := make([]byte, 16)
	if n, err := rf.Read(buf); err != nil || string(buf[:n]) != "later" {
		t.Fatalf("Read = %q, %v", buf[:n], err)
	}
	if l := rf.TakeLook(); l != LookFound {
		t.Fatalf("the first read after the wait found %v; want LookFound", l)
	}
}

// With lookNow, AwaitAfter returns at once, and after WatchLook the Read
// after it records what its first read(2) found: nothing (then it waits, as
// any Read), or the answer. TakeLook tells it once.
func TestAwaitAfterLookNowRecordsTheLook(t *testing.T) {
	_, rf, wf, _ := pipeFDs(t) // the worker's end as an os.File: two goroutines write it
	err := rf.AwaitAfter(func() (bool, error) { return true, nil })
	if err != nil {
		t.Fatalf("AwaitAfter: %v", err)
	}
	rf.WatchLook()
	go func() {
		time.Sleep(20 * time.Millisecond)
		wf.Write([]byte("x"))
	}()
	buf := make([]byte, 4)
	if n, err := rf.Read(buf); n != 1 || err != nil {
		t.Fatalf("Read = %d, %v", n, err)
	}
	if l := rf.TakeLook(); l != LookEmpty {
		t.Fatalf("a look at once before the answer came = %v; want LookEmpty", l)
	}
	if l := rf.TakeLook(); l != LookNone {
		t.Fatalf("TakeLook twice = %v; want LookNone the second time", l)
	}

	wf.Write([]byte("y"))
	if err := rf.AwaitAfter(func() (bool, error) { return true, nil }); err != nil {
		t.Fatal(err)
	}
	rf.WatchLook()
	if l := rf.TakeLook(); l != LookNone {
		t.Fatalf("TakeLook before any Read = %v; want LookNone", l)
	}
	rf.Read(buf)
	if l := rf.TakeLook(); l != LookNone {
		t.Fatalf("TakeLook after a Read that TakeLook already gave up on = %v; want LookNone", l)
	}

	// A read without WatchLook records nothing.
	if err := rf.AwaitAfter(func() (bool, error) {
		wf.Write([]byte("z"))
		return false, nil
	}); err != nil {
		t.Fatal(err)
	}
	rf.Read(buf)
	if l := rf.TakeLook(); l != LookNone {
		t.Fatalf("TakeLook after an awaited answer = %v; want LookNone", l)
	}
}

// ask's error is AwaitAfter's, returned at once without a wait.
func TestAwaitAfterReturnsTheQuestionsError(t *testing.T) {
	_, rf, _, _ := pipeFDs(t)
	failed := errors.New("the request pipe is closed")
	done := make(chan error, 1)
	go func() { done <- rf.AwaitAfter(func() (bool, error) { return false, failed }) }()
	select {
	case err := <-done:
		if err != failed {
			t.Fatalf("AwaitAfter = %v; want ask's error", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("AwaitAfter waited after ask failed")
	}
}

// A wait that cannot begin (the read deadline passed; the descriptor
// closed) still asks, and the Read after fails as it would have; a
// deadline that passes during the wait ends it, and the Read says so.
func TestAwaitAfterDeadlinesAndClose(t *testing.T) {
	r, rf, _, _ := pipeFDs(t)
	r.SetReadDeadline(time.Now().Add(-time.Second))
	asked := 0
	ask := func() (bool, error) { asked++; return false, nil }
	if err := rf.AwaitAfter(ask); err != nil || asked != 1 {
		t.Fatalf("AwaitAfter past the deadline = %v, asked %d times; want nil, once", err, asked)
	}
	buf := make([]byte, 4)
	if _, err := rf.Read(buf); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("Read after = %v; want os.ErrDeadlineExceeded", err)
	}

	r.SetReadDeadline(time.Now().Add(30 * time.Millisecond))
	if err := rf.AwaitAfter(ask); err != nil || asked != 2 {
		t.Fatalf("AwaitAfter until the deadline = %v, asked %d times", err, asked)
	}
	if _, err := rf.Read(buf); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("Read after the deadline passed in the wait = %v; want os.ErrDeadlineExceeded", err)
	}

	r.Close()
	if err := rf.AwaitAfter(ask); err != nil || asked != 3 {
		t.Fatalf("AwaitAfter on a closed descriptor = %v, asked %d times", err, asked)
	}
	if _, err := rf.Read(buf); !errors.Is(err, os.ErrClosed) {
		t.Fatalf("Read on the closed descriptor = %v; want os.ErrClosed", err)
	}
}

// A descriptor read through its own file cannot wait: AwaitAfter asks, and
// only asks.
func TestAwaitAfterPlain(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	f := Plain(r)
	if f.CanAwait() {
		t.Fatal("a Plain FD says it can wait")
	}
	asked := false
	if err := f.AwaitAfter(func() (bool, error) { asked = true; return false, nil }); err != nil || !asked {
		t.Fatalf("AwaitAfter on a plain FD = %v, asked %v", err, asked)
	}
}
