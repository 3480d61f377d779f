package wire

import (
	"errors"
	"io"
	"os"
	"syscall"
)

// Failure is an exchange that did not complete: the restart reason (§9.1)
// and the error type answered when no head was sent yet (§8.2).
type Failure struct {
	Reason RestartReason
	Type   ErrorType
}

var (
	FailCrashed = &Failure{ReasonCrashed, ErrWorkerCrashed}
	FailBad     = &Failure{ReasonBadResponse, ErrBadResponse}
	FailTimeout = &Failure{ReasonTimeout, ErrTimeout}
	// FailExchange is a response head without this exchange's token
	// (PROTOCOL.md §4.6): stale bytes, never this request's answer.
	FailExchange = &Failure{ReasonBadResponse, ErrBadResponse}
)

// Classify maps an error on the response pipe to PROTOCOL.md §8.4–§8.6.
func Classify(err error) *Failure {
	switch {
	case errors.Is(err, os.ErrDeadlineExceeded):
		return FailTimeout
	case err == io.EOF, errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, syscall.EPIPE),
		errors.Is(err, os.ErrClosed):
		return FailCrashed
	}
	return FailBad
}
