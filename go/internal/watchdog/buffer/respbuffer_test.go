package buffer

import (
	"bytes"
	"errors"
	"io"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/afterburn-dev/afterburn/go/internal/watchdog/config"
	"github.com/afterburn-dev/afterburn/go/internal/watchdog/obs"
)

// slowClient is a client that takes what the client writer sends at its own
// pace: each Write waits for a token, so the queue fills as a slow client's
// would.
type slowClient struct {
	mu      sync.Mutex
	got     bytes.Buffer
	flushes int
	tokens  chan struct{}
	fail    error // every Write fails with it, once set
}

func (c *slowClient) Write(p []byte) (int, error) {
	if c.tokens != nil {
		<-c.tokens
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.fail != nil {
		return 0, c.fail
	}
	return c.got.Write(p)
}

func (c *slowClient) Flush() error {
	c.mu.Lock()
	c.flushes++
	c.mu.Unlock()
	return nil
}

func testBuffers(t *testing.T, memory, spillMax int64) (*RespBuffers, *SpillBudget) {
	budget := &SpillBudget{Max: spillMax}
	cfg := &config.Config{ResponseBuffering: true, ResponseBufferMemory: memory, BufferDir: t.TempDir()}
	return NewRespBuffers(cfg, budget, obs.NewLogger(io.Discard, false)), budget
}

func pattern(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*7 + i>>9)
	}
	return b
}

// TestBufferSpillsAndDelivers: a body larger than response_buffer_memory goes
// to the temporary file past it, the slow client gets every byte in order,
// and the memory, the file's bytes and buffer_spill_max are all given back
// (PROTOCOL.md §6.1, §6.6).
func TestBufferSpillsAndDelivers(t *testing.T) {
	bs, budget := testBuffers(t, 128<<10, 8<<20)
	client := &slowClient{tokens: make(chan struct{})}
	b := bs.NewBuffer(client, 1, "req-1", time.Time{}, nil, false)
	go b.Write()
	body := pattern(3<<20 + 17)
	for p := body; len(p) > 0; {
		k := min(len(p), 40_000)
		if err := b.Put(p[:k]); err != nil {
			t.Fatal(err)
		}
		p = p[k:]
	}
	b.End(false)
	if file := bs.HeldBytes("file"); file == 0 {
		t.Errorf("nothing spilled with a 3 MiB body and 128 KiB of memory; memory holds %d", bs.HeldBytes("memory"))
	}
	if mem := bs.HeldBytes("memory"); mem > 128<<10+respBlockSize {
		t.Errorf("memory holds %d bytes; response_buffer_memory is %d", mem, 128<<10)
	}
	close(client.tokens) // the client reads on at full speed
	if lost := b.Finish(); lost {
		t.Fatal("Finish reports lost bytes")
	}
	if !bytes.Equal(client.got.Bytes(), body) {
		t.Fatalf("the client got %d bytes, not the %d-byte body in order", client.got.Len(), len(body))
	}
	if m, f, u := bs.HeldBytes("memory"), bs.HeldBytes("file"), budget.Used.Load(); m != 0 || f != 0 || u != 0 {
		t.Errorf("after the response: memory %d, file %d, spill budget used %d; want 0", m, f, u)
	}
}

// TestBufferWithoutRoomWaitsForTheClient: with no spill budget and the least
// memory, the exchange still hands over one block at a time and waits for the
// client, never failing the response for want of room; a deadline that passes
// while it waits ends the exchange (§5.2).
func TestBufferWithoutRoomWaitsForTheClient(t *testing.T) {
	bs, _ := testBuffers(t, 1, 0)
	client := &slowClient{}
	b := bs.NewBuffer(client, 1, "req-2", time.Time{}, nil, true)
	go b.Write()
	body := pattern(64 << 10)
	if err := b.Put(body); err != nil {
		t.Fatal(err)
	}
	b.End(false)
	if b.Finish() || !bytes.Equal(client.got.Bytes(), body) {
		t.Fatalf("the client got %d bytes of %d", client.got.Len(), len(body))
	}
	if client.flushes == 0 {
		t.Error("a chunked body's head was never flushed before its first chunk")
	}

	stuck := &slowClient{tokens: make(chan struct{})} // never reads
	b = bs.NewBuffer(stuck, 1, "req-3", time.Now().Add(50*time.Millisecond), nil, false)
	go b.Write()
	err := b.Put(body)
	if !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("Put past the deadline: %v; want the deadline's error", err)
	}
	b.End(true)
	close(stuck.tokens)
	b.Finish()
}

// TestBufferClientGone: a client that fails ends the client writer, and the
// exchange reads on, discarding, to the end of the response (§6.5).
func TestBufferClientGone(t *testing.T) {
	bs, _ := testBuffers(t, 64<<10, 1<<20)
	client := &slowClient{fail: errors.New("connection reset by peer")}
	b := bs.NewBuffer(client, 1, "req-4", time.Time{}, nil, false)
	go b.Write()
	for range 64 {
		if err := b.Put(pattern(32 << 10)); err != nil {
			t.Fatalf("Put after the client went away: %v; want the rest discarded", err)
		}
	}
	b.End(false)
	b.Finish()
	if m, f := bs.HeldBytes("memory"), bs.HeldBytes("file"); m != 0 || f != 0 {
		t.Errorf("after a gone client: memory %d, file %d; want 0", m, f)
	}
}

// TestChunkedEndIn: whether bytes already read hold a whole chunked body.
func TestChunkedEndIn(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want bool
	}{
		{"0\r\n\r\n", true},
		{"5\r\nhello\r\n0\r\n\r\n", true},
		{"5;ext=1\r\nhello\r\n0\r\nX-T: 1\r\n\r\n", true},
		{"5\r\nhello\r\n0\r\n", false},
		{"5\r\nhel", false},
		{"a\r\n0123456789\r\n", false},
		{"zz\r\n", false},
		{"00000000000000000\r\n\r\n", false}, // 17 digits
	} {
		if got := ChunkedEndIn([]byte(tc.in)); got != tc.want {
			t.Errorf("ChunkedEndIn(%q) = %v; want %v", tc.in, got, tc.want)
		}
	}
}

// TestSpillBudget: buffer_spill_max is shared and never exceeded.
func TestSpillBudget(t *testing.T) {
	b := &SpillBudget{Max: 100}
	if !b.reserve(60) || b.reserve(41) || !b.reserve(40) {
		t.Fatalf("reserve 60, 41, 40 of 100: used %d", b.Used.Load())
	}
	b.Release(100)
	if b.Used.Load() != 0 {
		t.Fatalf("used %d after releasing all", b.Used.Load())
	}
}
