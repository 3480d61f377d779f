package rawio

import (
	"bytes"
	"errors"
	"io"
	"net"
	"os"
	"testing"
	"time"
)

// Inside Hold, a read that came back short is the last read before a wait:
// the next Read says ErrWouldWait without reading, even with bytes there,
// and the bytes that came after that short read wake the wait. A write
// between the short read and the wait, where a lost wake-up would hang
// Hold, is the case that matters.
func TestHoldWaitsWithoutARead(t *testing.T) {
	_, rf, _, wf := pipeFDs(t)
	wf.Write([]byte("first"))
	buf := make([]byte, 64)
	var got []string
	calls := 0
	err := rf.Hold(func() bool {
		calls++
		switch calls {
		case 1:
			n, err := rf.Read(buf)
			if err != nil || string(buf[:n]) != "first" {
				t.Fatalf("the first read in the hold = %q, %v", buf[:n], err)
			}
			got = append(got, string(buf[:n]))
			wf.Write([]byte("second")) // after the short read, before the wait
			if n, err := rf.Read(buf); n != 0 || err != ErrWouldWait {
				t.Fatalf("a read after a short one = %d, %v; want ErrWouldWait and no read", n, err)
			}
			return false
		case 2:
			n, err := rf.Read(buf)
			if err != nil {
				t.Fatalf("the read after the wake-up: %v", err)
			}
			got = append(got, string(buf[:n]))
			return true
		}
		t.Fatalf("fn called %d times", calls)
		return true
	})
	if err != nil || len(got) != 2 || got[1] != "second" {
		t.Fatalf("Hold = %v, reads %q; want first, then second after one wait", err, got)
	}
}

// A read that fills its buffer may have left bytes: the next read reads.
// A read that finds nothing (EAGAIN) waits as a short one does.
func TestHoldReadsOnAfterAFullRead(t *testing.T) {
	_, rf, _, wf := pipeFDs(t)
	wf.Write([]byte("0123456789"))
	buf := make([]byte, 4)
	var got bytes.Buffer
	waits := 0
	go func() {
		time.Sleep(20 * time.Millisecond)
		wf.Write([]byte("later"))
	}()
	err := rf.Hold(func() bool {
		for {
			n, err := rf.Read(buf)
			got.Write(buf[:n])
			switch {
			case err == ErrWouldWait:
				waits++
				return false
			case err != nil:
				t.Fatalf("Read: %v", err)
			}
			if got.Len() == 15 {
				return true
			}
		}
	})
	if err != nil || got.String() != "0123456789later" {
		t.Fatalf("Hold = %v, read %q", err, got.String())
	}
	// 0123 4567 are full reads; 89 is short: one wait for "later" (or two,
	// if its bytes came in two wake-ups).
	if waits < 1 {
		t.Fatalf("%d waits; want one at least, after the short read of 89", waits)
	}
}

// The end of the stream, a deadline and Close end a hold as they end a
// Read, with Read's errors.
func TestHoldEnds(t *testing.T) {
	r, rf, w, _ := pipeFDs(t)
	r.SetReadDeadline(time.Now().Add(20 * time.Millisecond))
	err := rf.Hold(func() bool {
		_, err := rf.Read(make([]byte, 8))
		if err != ErrWouldWait {
			t.Fatalf("Read of an empty pipe in a hold = %v", err)
		}
		return false
	})
	if !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("Hold past the deadline = %v; want os.ErrDeadlineExceeded", err)
	}
	r.SetReadDeadline(time.Time{})
	w.Close()
	var eof error
	err = rf.Hold(func() bool {
		_, eof = rf.Read(make([]byte, 8))
		return eof != ErrWouldWait
	})
	if err != nil || eof != io.EOF {
		t.Fatalf("a hold over a pipe whose writer closed = %v, read %v; want nil, io.EOF", err, eof)
	}
	r2, rf2, _, _ := pipeFDs(t) // its writer open: nothing ends the wait but Close
	go func() {
		time.Sleep(10 * time.Millisecond)
		r2.Close()
	}()
	err = rf2.Hold(func() bool {
		_, err := rf2.Read(make([]byte, 8))
		return err != ErrWouldWait
	})
	if !errors.Is(err, os.ErrClosed) {
		t.Fatalf("a hold ended by Close = %v; want os.ErrClosed", err)
	}
}

// Outside a hold, Read waits as always; a Plain FD cannot be held; neither
// Hold nor a held read allocates.
func TestHoldAloneAndPlain(t *testing.T) {
	_, rf, _, wf := pipeFDs(t)
	if !rf.CanHold() {
		t.Fatal("a pipe cannot be held")
	}
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	if p := Plain(a); p.CanHold() || p.Hold(func() bool { return true }) != ErrNoHold {
		t.Fatal("a Plain FD claims a hold")
	}
	buf, msg := make([]byte, 8), []byte("ping")
	fn := func() bool {
		_, err := rf.Read(buf)
		return err != ErrWouldWait
	}
	allocs := testing.AllocsPerRun(200, func() {
		wf.Write(msg)
		rf.Hold(fn)
	})
	if allocs != 0 {
		t.Fatalf("%.1f allocations per hold; want 0", allocs)
	}
	go func() {
		time.Sleep(10 * time.Millisecond)
		wf.Write(msg)
	}()
	if n, err := rf.Read(buf); n != 4 || err != nil {
		t.Fatalf("Read after holds = %d, %v; want to wait for the 4 bytes", n, err)
	}
}
