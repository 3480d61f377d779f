package rawio

import (
	"bytes"
	"errors"
	"io"
	"net"
	"os"
	"syscall"
	"testing"
	"time"
)

func pipeFDs(t *testing.T) (r *os.File, rf *FD, w *os.File, wf *FD) {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close(); w.Close() })
	rf, wf = File(r), File(w)
	if rf.plain != nil || wf.plain != nil {
		t.Fatal("an os.Pipe's ends are not read raw")
	}
	return r, rf, w, wf
}

// A pipe read returns what the pipe holds, up to the buffer, and io.EOF
// once the writer is gone.
func TestPipeReadAndEOF(t *testing.T) {
	_, rf, w, wf := pipeFDs(t)
	if n, err := wf.Write([]byte("hello")); n != 5 || err != nil {
		t.Fatalf("Write = %d, %v", n, err)
	}
	buf := make([]byte, 8)
	if n, err := rf.Read(buf); n != 5 || err != nil || string(buf[:n]) != "hello" {
		t.Fatalf("Read = %d %q, %v", n, buf[:n], err)
	}
	wf.Write([]byte("1234567890"))
	if n, err := rf.Read(buf); n != 8 || err != nil || string(buf[:n]) != "12345678" {
		t.Fatalf("a read of more than its buffer: %d %q, %v; want the first 8 bytes", n, buf[:n], err)
	}
	if n, err := rf.Read(buf); n != 2 || err != nil {
		t.Fatalf("the rest: %d, %v; want 2 bytes", n, err)
	}
	w.Close()
	if n, err := rf.Read(buf); n != 0 || err != io.EOF {
		t.Fatalf("Read after the writer closed = %d, %v; want io.EOF", n, err)
	}
}

// A read waits in the poller for bytes that come later, and a write larger
// than the pipe waits for the reader: neither busy-loops nor returns early.
func TestPipeWaitsBothWays(t *testing.T) {
	r, rf, _, wf := pipeFDs(t)
	big := bytes.Repeat([]byte("0123456789abcdef"), 64<<10) // 1 MiB, far over a pipe's 64 KiB
	done := make(chan error, 1)
	go func() {
		_, err := wf.Write(big)
		done <- err
	}()
	got, err := io.ReadAll(io.LimitReader(struct{ io.Reader }{rf}, int64(len(big))))
	if err != nil || !bytes.Equal(got, big) {
		t.Fatalf("read back %d bytes, %v; want the %d written", len(got), err, len(big))
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	go func() {
		time.Sleep(20 * time.Millisecond)
		wf.Write([]byte("late"))
	}()
	buf := make([]byte, 16)
	if n, err := rf.Read(buf); string(buf[:n]) != "late" || err != nil {
		t.Fatalf("Read = %q, %v", buf[:n], err)
	}
	_ = r
}

// The errors are the os.File's own: a deadline, a closed file, a write
// with no reader (EPIPE).
func TestPipeErrorsAsOSFile(t *testing.T) {
	r, rf, w, wf := pipeFDs(t)
	r.SetReadDeadline(time.Now().Add(10 * time.Millisecond))
	_, err := rf.Read(make([]byte, 4))
	var pe *os.PathError
	if !errors.Is(err, os.ErrDeadlineExceeded) || !errors.As(err, &pe) || pe.Op != "read" {
		t.Fatalf("Read past its deadline = %v; want a read *os.PathError of os.ErrDeadlineExceeded", err)
	}
	r.Close()
	if _, err := rf.Read(make([]byte, 4)); !errors.Is(err, os.ErrClosed) {
		t.Fatalf("Read of a closed file = %v; want os.ErrClosed, as os.File.Read says", err)
	}
	if _, err := wf.Write([]byte("x")); !errors.Is(err, syscall.EPIPE) {
		t.Fatalf("Write with the reader gone = %v; want EPIPE", err)
	}
	w.Close()
	if _, err := wf.Write([]byte("x")); !errors.Is(err, os.ErrClosed) {
		t.Fatalf("Write to a closed file = %v; want os.ErrClosed", err)
	}
}

// A connection's errors are net's: *net.OpError with net.ErrClosed, a
// timeout that says so, and a bare io.EOF.
func TestConnAsNetConn(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	client, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	sc, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	server := sc.(*net.TCPConn)
	defer server.Close()
	fd := Conn(server)
	if fd.plain != nil {
		t.Fatal("a TCP connection is not read raw")
	}
	client.Write([]byte("GET / HTTP/1.1\r\n\r\n"))
	buf := make([]byte, 64)
	if n, err := fd.Read(buf); err != nil || string(buf[:n]) != "GET / HTTP/1.1\r\n\r\n" {
		t.Fatalf("Read = %q, %v", buf[:n], err)
	}
	if n, err := fd.Write([]byte("HTTP/1.1 204 No Content\r\n\r\n")); n != 27 || err != nil {
		t.Fatalf("Write = %d, %v", n, err)
	}
	if n, _ := io.ReadFull(client, buf[:27]); n != 27 {
		t.Fatalf("the client read %d bytes of the response", n)
	}
	server.SetReadDeadline(time.Now().Add(10 * time.Millisecond))
	_, err = fd.Read(buf)
	var ne net.Error
	if !errors.As(err, &ne) || !ne.Timeout() {
		t.Fatalf("Read past its deadline = %v; want a net.Error that is a timeout", err)
	}
	if _, ok := err.(net.Error); !ok {
		t.Fatalf("Read past its deadline = %T; net/http asserts net.Error on the error itself", err)
	}
	server.SetReadDeadline(time.Time{})
	client.Close()
	if n, err := fd.Read(buf); n != 0 || err != io.EOF {
		t.Fatalf("Read after the client closed = %d, %v; want a bare io.EOF", n, err)
	}
	server.Close()
	_, err = fd.Read(buf)
	var oe *net.OpError
	if !errors.Is(err, net.ErrClosed) || !errors.As(err, &oe) || oe.Op != "read" {
		t.Fatalf("Read of a closed connection = %v; want a read *net.OpError of net.ErrClosed", err)
	}
}

// Neither Read nor Write allocates: the poller's callback is bound once.
func TestNoAllocation(t *testing.T) {
	_, rf, _, wf := pipeFDs(t)
	msg, buf := []byte("ping"), make([]byte, 8)
	allocs := testing.AllocsPerRun(200, func() {
		wf.Write(msg)
		rf.Read(buf)
	})
	if allocs != 0 {
		t.Fatalf("%.1f allocations per write and read; want 0", allocs)
	}
}

// A blocking descriptor (one os.NewFile was given as it came) is read and
// written through its file, never with a raw call that would stall a thread
// the scheduler counts as running.
func TestBlockingFileGoesThroughItsFile(t *testing.T) {
	var fds [2]int
	if err := syscall.Pipe(fds[:]); err != nil {
		t.Fatal(err)
	}
	r, w := os.NewFile(uintptr(fds[0]), "r"), os.NewFile(uintptr(fds[1]), "w")
	defer r.Close()
	defer w.Close()
	rf, wf := File(r), File(w)
	if rf.plain == nil || wf.plain == nil {
		t.Fatal("a blocking pipe is read raw")
	}
	go func() {
		time.Sleep(10 * time.Millisecond)
		wf.Write([]byte("blocking"))
	}()
	buf := make([]byte, 16)
	if n, err := rf.Read(buf); string(buf[:n]) != "blocking" || err != nil {
		t.Fatalf("Read = %q, %v", buf[:n], err)
	}
}

// Coarse never moves a deadline earlier, moves it at most one grain later,
// and gives requests a grain apart the same deadline.
func TestCoarse(t *testing.T) {
	if !Coarse(time.Time{}, time.Second).IsZero() {
		t.Fatal("a zero deadline is no longer zero")
	}
	base := time.Date(2026, 11, 29, 9, 0, 0, 123456789, time.UTC)
	for _, tc := range []struct {
		timeout, grain time.Duration
	}{{10 * time.Second, 10 * time.Millisecond}, {320 * time.Millisecond, 5 * time.Millisecond}, {10 * time.Millisecond, time.Millisecond}} {
		same := 0
		prev := time.Time{}
		for step := time.Duration(0); step < 4*tc.grain; step += tc.grain / 10 {
			d := base.Add(step)
			c := Coarse(d, tc.timeout)
			if c.Before(d) || c.Sub(d) > tc.grain {
				t.Fatalf("timeout %v: Coarse(%v) = %v; want within [d, d+%v]", tc.timeout, d, c, tc.grain)
			}
			if c.Equal(prev) {
				same++
			}
			prev = c
		}
		if same < 30 { // 40 steps of a tenth of a grain: all but the grain changes repeat
			t.Errorf("timeout %v: %d of 40 consecutive deadlines repeated the one before; want most", tc.timeout, same)
		}
	}
	// A deadline with a monotonic reading (time.Now's) rounds as its wall time.
	now := time.Now()
	if c := Coarse(now.Add(time.Second), time.Second); c.Before(now.Add(time.Second).Round(0)) {
		t.Fatalf("Coarse of a monotonic time went earlier: %v", c)
	}
}
