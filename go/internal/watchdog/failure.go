package watchdog

import (
	"errors"
	"io"
	"os"
	"syscall"
)

// failure is an exchange that did not complete: the restart reason (§9.1)
// and the error type answered when no head was sent yet (§8.2).
type failure struct {
	reason restartReason
	etype  errorType
}

var (
	failCrashed = &failure{reasonCrashed, errWorkerCrashed}
	failBad     = &failure{reasonBadResponse, errBadResponse}
	failTimeout = &failure{reasonTimeout, errTimeout}
	// failExchange is a response head without this exchange's token
	// (PROTOCOL.md §4.6): stale bytes, never this request's answer.
	failExchange = &failure{reasonBadResponse, errBadResponse}
)

// classify maps an error on the response pipe to PROTOCOL.md §8.4–§8.6.
func classify(err error) *failure {
	switch {
	case errors.Is(err, os.ErrDeadlineExceeded):
		return failTimeout
	case err == io.EOF, errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, syscall.EPIPE),
		errors.Is(err, os.ErrClosed):
		return failCrashed
	}
	return failBad
}
