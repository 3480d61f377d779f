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
// A nil *inflight (no cancel pipe: one lane, as before lanes) does nothing.
type inflight struct {
	mu sync.Mutex
	m  map[string]*exchange
}

func newInflight() *inflight { return &inflight{m: make(map[string]*exchange)} }

func (f *inflight) add(ex *exchange) {
	if f == nil || ex.token == "" {
		return
	}
	f.mu.Lock()
	f.m[ex.token] = ex
	f.mu.Unlock()
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
	f.mu.Unlock()
	if ex == nil {
		return false
	}
	// The same cancellation as at the end of the handler: the request's context is
	// done, and a context made from it later is born done.
	ex.cancel()
	return true
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
