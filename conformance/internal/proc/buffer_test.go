package proc

import (
	"context"
	"regexp"
	"strings"
	"testing"
	"time"
)

func TestBufferKeepsNewest(t *testing.T) {
	b := NewBuffer(10)
	b.Write([]byte("line1\nline2\n"))
	b.Write([]byte("line3\n"))
	if got := b.String(); got != "line3\n" {
		t.Errorf("got %q; want the newest whole lines", got)
	}
	if b.Len() != 18 {
		t.Errorf("Len: got %d; want 18", b.Len())
	}
	if got := b.Since(12); got != "line3\n" {
		t.Errorf("Since(12): got %q", got)
	}
}

func TestBufferWaitFor(t *testing.T) {
	b := NewBuffer(1 << 20)
	b.Write([]byte("listening on old\n"))
	from := b.Len()
	go b.Write([]byte("x: listening on 127.0.0.1:4242\n"))
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	m, err := b.WaitFor(ctx, from, regexp.MustCompile(`listening on (\S+)`))
	if err != nil {
		t.Fatal(err)
	}
	if m[1] != "127.0.0.1:4242" {
		t.Errorf("got %q; want the line written after from", m[1])
	}
	short, cancel2 := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel2()
	if _, err := b.WaitFor(short, b.Len(), regexp.MustCompile("never")); err == nil {
		t.Error("WaitFor: got a match for a pattern never written")
	}
	if tail := b.Tail(1); !strings.Contains(tail, "4242") {
		t.Errorf("Tail(1): got %q", tail)
	}
}
