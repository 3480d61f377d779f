package worker

import (
	"time"

	"github.com/afterburn-dev/afterburn/go/internal/watchdog/rawio"
)

// A whole request written, and its response awaited (issue 29).
//
// Why: reading the response pipe right after writing a request finds it
// empty unless the worker answered while the write ran, which it does only
// when it shares the watchdog's CPU and the kernel ran it as soon as the
// write woke it. Any other time that read(2) answers EAGAIN before the wait
// it leads to: on every request of a handler slower than the write, and on
// about a third of a minimal C child's pinned to the watchdog's CPU (make
// bench-counts). Awaiting instead costs the same system call the other way
// round when the answer is there already (the poller's look finds it), and
// the goroutine a park. So the lane times each write and looks at once
//   - after a write that took at least twice the quickest recent one: the
//     worker ran inside it;
//   - after a quick write, while looks after quick writes keep finding the
//     answer (a worker faster than the watchdog: a quick C child on a CPU
//     of its own, or a watchdog slowed down, as under valgrind), as a plain
//     write without a wait around it;
//   - once they stop, after one quick write in sampleEvery, to notice a
//     change. The rest are awaited.
// Only looks after quick writes are scored, so that the lane settles on
// the cheaper way whatever it started with.
// A wrong guess costs one system call, never an answer.

const (
	// sendWindow is how many writes the quickest one is taken over, so
	// that a slower machine, or a slower phase of one, moves the measure.
	sendWindow = 256
	// quickScoreMax bounds the score of looks after quick writes: +2 for
	// one that found the answer, -1 for one that found nothing; above
	// half, every write is looked after at once. Looking at once pays
	// while a third of those looks find the answer: an awaited answer that
	// was there already costs the poller's look, a park and a wake of the
	// goroutine, and the wait begun around the write (callgrind: about
	// 1.3k instructions), several times a read that finds nothing.
	quickScoreMax = 16
	quickFound    = 2
	quickEmpty    = 1
	sampleEvery   = 16
)

// sender is a lane's state for Send: the write timed, the durations it is
// judged against, and how looks after quick writes fared.
type sender struct {
	flush    func() (lookNow bool, err error) // the lane's flushTimed, bound once
	asked    time.Time                        // when the exchange began writing the request
	quickest time.Duration                    // the quickest write of the last whole window
	next     time.Duration                    // the quickest of this window so far
	n        int                              // writes in this window
	score    int                              // of looks after quick writes, 0..quickScoreMax
	awaited  int                              // quick writes awaited since the last look after one
	looked   bool                             // the last Send looked at once after a quick write
}

func newSender(flush func() (bool, error)) sender {
	return sender{flush: flush, score: quickScoreMax}
}

// Send writes the request buffered in BW, which must be all of it (the head
// and an inline body, PROTOCOL.md §6.1), and returns its error, as
// BW.Flush would. On success the response is read from BR next: Send
// returns at once when the answer is probably there, else once the response
// pipe is readable, or its read deadline passes (the read then fails as it
// would have). asked is when the exchange began writing the request.
func (l *Lane) Send(asked time.Time) error {
	s := &l.send
	if s.looked {
		s.learn(l.resp.TakeLook())
	}
	s.asked = asked
	var err error
	if s.score > quickScoreMax/2 || !l.resp.CanAwait() {
		// Looks after quick writes find the answer: every write is
		// looked after at once, a plain write without a wait around it.
		_, err = l.flushTimed()
	} else {
		err = l.resp.AwaitAfter(s.flush)
	}
	if s.looked {
		l.resp.WatchLook() // the read that follows; learn scores it next time
	}
	return err
}

// flushTimed writes BW (inside Send's wait on the response pipe, or
// plainly), and decides whether to look at once.
func (l *Lane) flushTimed() (bool, error) {
	if err := l.BW.Flush(); err != nil {
		l.send.looked = false
		return false, err
	}
	return l.send.lookNow(time.Since(l.send.asked)), nil
}

// lookNow decides, for a write that took d, whether the answer is looked
// for at once (see above).
func (s *sender) lookNow(d time.Duration) bool {
	s.looked = false
	if s.workerRan(d) {
		return true
	}
	if s.score > quickScoreMax/2 {
		s.looked = true
		return true
	}
	s.awaited++
	if s.awaited >= sampleEvery {
		s.awaited = 0
		s.looked = true
		return true
	}
	return false
}

// learn scores a look after a quick write: found, or not (LookNone: the
// read never came, as when the exchange failed first).
func (s *sender) learn(look rawio.Look) {
	switch look {
	case rawio.LookFound:
		s.score = min(s.score+quickFound, quickScoreMax)
	case rawio.LookEmpty:
		s.score = max(s.score-quickEmpty, 0)
	}
}

// workerRan reports whether a write that took d took long enough that the
// worker probably ran inside it: at least twice the quickest recent write.
func (s *sender) workerRan(d time.Duration) bool {
	if s.n == 0 || d < s.next {
		s.next = d
	}
	s.n++
	base := s.next
	if s.quickest > 0 && s.quickest < base {
		base = s.quickest
	}
	if s.n == sendWindow {
		s.quickest, s.n = s.next, 0
	}
	return d >= 2*base
}
