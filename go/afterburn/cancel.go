package afterburn

import (
	"bufio"
	"bytes"
	"io"
	"sync"
)

// inflight holds the exchanges the lanes are carrying, by their AfterBurn-Exchange
// token (PROTOCOL.md §4.6), so that a line of the cancel pipe reaches the exchange it
// names and no other (§2.5). Tokens are unique for the watchdog's whole run, so a
// token read after its exchange ended finds nothing, and a cancellation cannot reach
// the lane's next exchange: that one has another token and a context of its own.
//
// The cancel pipe and the lanes are separate pipes, so on a busy worker a cancellation
// can be read before its exchange's head (§2.5): the last earlyTokens tokens that named
// no exchange are remembered, and an exchange that comes with one is cancelled as it
// is added. A remembered token of an exchange that had already ended never comes again
// (tokens are never reused, §4.6) and ages out.
//
// A nil *inflight (no cancel pipe: one lane, as before lanes) does nothing.
type inflight struct {
	mu        sync.Mutex
	m         map[string]*exchange
	early     [earlyTokens]string // a ring of tokens that named no exchange
	earlyNext int                 // the ring's oldest entry, overwritten next
	earlySet  map[string]bool     // the ring's tokens
}

// earlyTokens bounds the remembered tokens; a cancellation read early is followed by
// its head within moments, while at most one line per exchange past its deadline comes.
const earlyTokens = 64

func newInflight() *inflight {
	return &inflight{m: make(map[string]*exchange), earlySet: make(map[string]bool)}
}

func (f *inflight) add(ex *exchange) {
	if f == nil || ex.token == "" {
		return
	}
	f.mu.Lock()
	f.m[ex.token] = ex
	early := f.earlySet[ex.token]
	delete(f.earlySet, ex.token) // its ring slot ages out as a stale entry
	f.mu.Unlock()
	if early {
		ex.cancel()
	}
}

func (f *inflight) remove(ex *exchange) {
	if f == nil || ex.token == "" {
		return
	}
	f.mu.Lock()
	if f.m[ex.token] == ex {
		delete(f.m, ex.token)
	}
	f.mu.Unlock()
}

// cancel fires the cancellation of the exchange with this token, if one is in flight,
// and reports whether there was one. An unknown token is no error: the response may
// have crossed the line on its way (§2.5).
func (f *inflight) cancel(token string) bool {
	f.mu.Lock()
	ex := f.m[token]
	if ex == nil {
		f.rememberLocked(token)
	}
	f.mu.Unlock()
	if ex == nil {
		return false
	}
	// The same cancellation as at the end of the handler: the request's context is
	// done, and a context made from it later is born done.
	ex.cancel()
	return true
}

// rememberLocked keeps token as one that named no exchange, forgetting the oldest.
func (f *inflight) rememberLocked(token string) {
	if f.earlySet[token] {
		return
	}
	if old := f.early[f.earlyNext]; old != "" {
		delete(f.earlySet, old)
	}
	f.early[f.earlyNext] = token
	f.earlyNext = (f.earlyNext + 1) % earlyTokens
	f.earlySet[token] = true
}

// cancelPrefix starts every line the watchdog writes to the cancel pipe (§2.5).
const cancelPrefix = "cancel "

// parseCancel returns the token of a line "cancel TOKEN" (its newline removed), or
// false for any other line, which the library ignores (§2.5).
func parseCancel(line []byte) (string, bool) {
	token, ok := bytes.CutPrefix(line, []byte(cancelPrefix))
	if !ok || !isExchangeToken(token) {
		return "", false
	}
	return string(token), true
}

// readCancels reads the cancel pipe until it ends or fails and cancels the exchanges
// it names. EOF means the watchdog closed it: nothing more to do (§2.5). A line longer
// than the buffer cannot be a cancellation (a token has at most 64 characters) and is
// skipped to its end.
func readCancels(r io.Reader, f *inflight) {
	br := bufio.NewReaderSize(r, 256)
	skipping := false
	for {
		line, err := br.ReadSlice('\n')
		switch err {
		case nil:
			if !skipping {
				if token, ok := parseCancel(line[:len(line)-1]); ok {
					f.cancel(token)
				}
			}
			skipping = false
		case bufio.ErrBufferFull:
			skipping = true
		default:
			return // EOF, or the pipe closed by Serve on its way out
		}
	}
}
