// Package proc holds the process plumbing both layers share: output
// buffers that can be waited on, and process-group killing.
package proc

import (
	"bytes"
	"context"
	"regexp"
	"strings"
	"sync"
)

// Buffer collects a process's output. It keeps at most max bytes (the
// newest) and lets callers wait for a pattern to appear without sleeping.
type Buffer struct {
	mu      sync.Mutex
	buf     []byte
	max     int
	dropped int64         // bytes dropped from the front
	changed chan struct{} // closed and replaced on every write
}

// NewBuffer keeps the newest max bytes.
func NewBuffer(max int) *Buffer {
	return &Buffer{max: max, changed: make(chan struct{})}
}

// Write appends p; it never fails.
func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	b.buf = append(b.buf, p...)
	if over := len(b.buf) - b.max; over > 0 {
		// Drop whole lines where possible so Tail starts on a line.
		cut := over
		if i := bytes.IndexByte(b.buf[over:], '\n'); i >= 0 && i < 4096 {
			cut = over + i + 1
		}
		b.buf = append(b.buf[:0], b.buf[cut:]...)
		b.dropped += int64(cut)
	}
	close(b.changed)
	b.changed = make(chan struct{})
	b.mu.Unlock()
	return len(p), nil
}

// String returns what is kept.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return string(b.buf)
}

// Len is the number of bytes ever written.
func (b *Buffer) Len() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.dropped + int64(len(b.buf))
}

// Since returns what was written after the first n bytes ever written
// (as far as it is still kept).
func (b *Buffer) Since(n int64) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	off := n - b.dropped
	if off < 0 {
		off = 0
	}
	if off > int64(len(b.buf)) {
		return ""
	}
	return string(b.buf[off:])
}

// Tail returns the last lines lines.
func (b *Buffer) Tail(lines int) string {
	s := strings.TrimRight(b.String(), "\n")
	if s == "" {
		return ""
	}
	parts := strings.Split(s, "\n")
	if len(parts) > lines {
		parts = append([]string{"…"}, parts[len(parts)-lines:]...)
	}
	for i, p := range parts {
		if len(p) > 400 {
			parts[i] = p[:400] + "…"
		}
	}
	return strings.Join(parts, "\n")
}

// WaitFor waits until re matches the output written after offset from
// (a Len value; 0 for all) and returns the submatches.
func (b *Buffer) WaitFor(ctx context.Context, from int64, re *regexp.Regexp) ([]string, error) {
	for {
		b.mu.Lock()
		ch := b.changed
		b.mu.Unlock()
		if m := re.FindStringSubmatch(b.Since(from)); m != nil {
			return m, nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}
