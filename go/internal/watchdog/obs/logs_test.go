package obs

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// LockedBuffer records what the logger writes and how many writes it made.
type LockedBuffer struct {
	mu     sync.Mutex
	buf    bytes.Buffer
	writes int
	gate   chan struct{} // when non-nil, every write waits for it to close
}

func (b *LockedBuffer) Write(p []byte) (int, error) {
	if b.gate != nil {
		<-b.gate
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.writes++
	return b.buf.Write(p)
}

func (b *LockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// TestLoggerWholeLinesInOrder: §9.5 — queued lines from concurrent writers
// come out whole, each writer's in its order, and a line of the watchdog's
// own comes after every line queued before it.
func TestLoggerWholeLinesInOrder(t *testing.T) {
	out := &LockedBuffer{}
	l := NewLogger(out, false)
	const writers, lines = 4, 500
	var wg sync.WaitGroup
	for w := 1; w <= writers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range lines {
				l.WorkerLine(w, 100+w, "stdout", fmt.Appendf(nil, "line %d", i))
			}
		}()
	}
	wg.Wait()
	l.Printf("done")
	got := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if len(got) != writers*lines+1 || got[len(got)-1] != "afterburn-watchdog: done" {
		t.Fatalf("got %d lines ending %q; want %d ending with the printf line", len(got), got[len(got)-1], writers*lines+1)
	}
	next := map[string]int{}
	for _, line := range got[:len(got)-1] {
		var w, i int
		if _, err := fmt.Sscanf(line, "w%d stdout: line %d", &w, &i); err != nil {
			t.Fatalf("torn line %q: %v", line, err)
		}
		key := fmt.Sprint(w)
		if i != next[key] {
			t.Fatalf("w%d: line %d after line %d", w, i, next[key]-1)
		}
		next[key]++
	}
	if out.writes > writers*lines/2 {
		t.Errorf("%d writes for %d lines; want them batched", out.writes, writers*lines)
	}
}

// TestLoggerBacklogPushesBack: a stalled stderr holds up the writers of new
// lines once maxLogBacklog bytes are queued, instead of growing the queue.
func TestLoggerBacklogPushesBack(t *testing.T) {
	out := &LockedBuffer{gate: make(chan struct{})}
	l := NewLogger(out, false)
	line := bytes.Repeat([]byte("x"), 1000)
	done := make(chan struct{})
	go func() {
		for range 3 * maxLogBacklog / len(line) {
			l.WorkerLine(1, 100, "stderr", line)
		}
		close(done)
	}()
	select {
	case <-done:
		t.Fatal("3 MiB of lines queued while the output was stalled; want the writer held up")
	case <-time.After(200 * time.Millisecond):
	}
	l.mu.Lock()
	backlog := len(l.pending)
	l.mu.Unlock()
	if backlog > maxLogBacklog+2*len(line) {
		t.Errorf("backlog %d bytes; want at most %d", backlog, maxLogBacklog+2*len(line))
	}
	close(out.gate)
	<-done
	l.Printf("end")
	if n := strings.Count(out.String(), "\n"); n != 3*maxLogBacklog/len(line)+1 {
		t.Errorf("%d lines written; want every one", n)
	}
}

// TestAppendStamp: the hand-written stamp is the layout 2006-01-02T15:04:05.000Z, in UTC,
// at the edges of its fields.
func TestAppendStamp(t *testing.T) {
	east := time.FixedZone("east", 5*3600+1800)
	for _, tm := range []time.Time{
		time.Date(2026, 11, 26, 1, 2, 3, 4_000_000, time.UTC),
		time.Date(2026, 12, 31, 23, 59, 59, 999_999_999, time.UTC),
		time.Date(999, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(2026, 3, 1, 2, 0, 0, 70_000_000, east), // the day before, in UTC
		time.Now(),
	} {
		want := tm.UTC().Format("2006-01-02T15:04:05.000Z")
		if got := string(appendStamp([]byte("x "), tm)); got != "x "+want {
			t.Errorf("appendStamp(%v) = %q; want %q", tm, got, "x "+want)
		}
	}
}

// TestAppendSeconds: a duration in the access log reads as AppendFloat's six decimals
// (exact halves of a microsecond, where AppendFloat rounds the binary value, aside).
func TestAppendSeconds(t *testing.T) {
	for _, d := range []time.Duration{0, 1, 499, 501, 1499, time.Microsecond, 123456789, time.Second, 90*time.Second + 7, 3*time.Hour + 999999999} {
		want := strconv.FormatFloat(d.Seconds(), 'f', 6, 64)
		if got := string(appendSeconds(nil, d)); got != want {
			t.Errorf("appendSeconds(%d) = %q; want %q", d, got, want)
		}
	}
}
