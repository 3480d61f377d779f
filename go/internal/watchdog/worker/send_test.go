package worker

import (
	"bufio"
	"errors"
	"io"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/afterburn-dev/afterburn/go/internal/watchdog/rawio"
)

// A write is slow (the worker ran inside it) at twice the quickest of this
// window and the last whole one, never the first write; a window's end
// hands its quickest on, so that the measure follows the machine.
func TestWorkerRan(t *testing.T) {
	var s sender
	us := time.Microsecond
	steps := []struct {
		d    time.Duration
		want bool
	}{
		{10 * us, false}, // the first write is the measure
		{19 * us, false},
		{20 * us, true},
		{4 * us, false}, // a quicker one lowers the measure
		{8 * us, true},
		{7 * us, false},
	}
	for i, st := range steps {
		if got := s.workerRan(st.d); got != st.want {
			t.Fatalf("step %d: workerRan(%v) = %v; want %v", i, st.d, got, st.want)
		}
	}
	// The rest of the window at 40µs: its quickest stays 4µs, and so does
	// the next window's measure at first, then 40µs once a whole window
	// without quicker writes has passed.
	for s.n != 0 {
		s.workerRan(40 * us)
	}
	if s.quickest != 4*us {
		t.Fatalf("the quickest of the window that ended = %v; want 4µs", s.quickest)
	}
	if !s.workerRan(40 * us) {
		t.Fatal("40µs against the last window's 4µs: not slow")
	}
	for s.n != 0 {
		s.workerRan(40 * us)
	}
	if s.quickest != 40*us || s.workerRan(60*us) || !s.workerRan(80*us) {
		t.Fatalf("after a window of 40µs writes: quickest %v; 60µs must be quick, 80µs slow", s.quickest)
	}
}

// The score of looks after quick writes: +2 found, -1 empty, bounded,
// LookNone (no read came) ignored.
func TestLearn(t *testing.T) {
	s := newSender(nil)
	if s.score != quickScoreMax {
		t.Fatalf("a new lane's score = %d; want %d (look at once until looks find nothing)", s.score, quickScoreMax)
	}
	s.learn(rawio.LookFound)
	s.learn(rawio.LookNone)
	if s.score != quickScoreMax {
		t.Fatalf("score after found and none at the top = %d", s.score)
	}
	s.learn(rawio.LookEmpty)
	s.learn(rawio.LookNone)
	if s.score != quickScoreMax-1 {
		t.Fatalf("score after one empty look = %d; want %d", s.score, quickScoreMax-1)
	}
	for i := 0; i < 2*quickScoreMax; i++ {
		s.learn(rawio.LookEmpty)
	}
	if s.score != 0 {
		t.Fatalf("score floor = %d; want 0", s.score)
	}
	s.learn(rawio.LookFound)
	if s.score != 2 {
		t.Fatalf("score after a find at 0 = %d; want 2", s.score)
	}
	// One find in three holds the score; fewer let it fall.
	s.score = quickScoreMax
	for i := 0; i < 3*quickScoreMax; i++ {
		s.learn(rawio.LookFound)
		s.learn(rawio.LookEmpty)
		s.learn(rawio.LookEmpty)
	}
	if s.score < quickScoreMax-2 {
		t.Fatalf("score after finds one look in three = %d; want it held near %d", s.score, quickScoreMax)
	}
	for i := 0; i < 3*quickScoreMax; i++ {
		s.learn(rawio.LookFound)
		s.learn(rawio.LookEmpty)
		s.learn(rawio.LookEmpty)
		s.learn(rawio.LookEmpty)
	}
	if s.score > quickScoreMax/2 {
		t.Fatalf("score after finds one look in four = %d; want at most half", s.score)
	}
}

// lookNow at a score at or below half: slow writes look (not scored),
// quick ones wait but for one in sampleEvery, which is scored; above half
// every write looks, scored.
func TestLookNow(t *testing.T) {
	us := time.Microsecond
	s := newSender(nil)
	s.score = quickScoreMax / 2
	if s.lookNow(10*us) || s.looked {
		t.Fatal("the first, quick write looks at once")
	}
	if !s.lookNow(30*us) || s.looked {
		t.Fatal("a slow write does not look at once, or is scored")
	}
	looks := 0
	for i := 0; i < 3*sampleEvery; i++ {
		if s.lookNow(10 * us) {
			looks++
			if !s.looked {
				t.Fatal("a sampled look is not scored")
			}
		}
	}
	if looks != 3 {
		t.Fatalf("%d quick writes looked at once in %d; want one in %d", looks, 3*sampleEvery, sampleEvery)
	}
	s.score = quickScoreMax/2 + 1
	if !s.lookNow(10*us) || !s.looked {
		t.Fatal("above half, a quick write does not look at once, scored")
	}
}

// A worker that answers each request after delay.
func answerEach(reqR, respW *os.File, delay time.Duration) {
	go func() {
		br := bufio.NewReader(reqR)
		for {
			if _, err := br.ReadString('\n'); err != nil {
				return
			}
			time.Sleep(delay)
			respW.Write([]byte("answer\n"))
		}
	}()
}

// A worker slower than the write: the lane looks at once while looks find
// the answer, stops when they find the pipe empty, and then awaits the
// answer, whose first read finds it.
func TestSendLearnsToAwait(t *testing.T) {
	l, reqR, respW := lanePair(t)
	answerEach(reqR, respW, 5*time.Millisecond)
	send := func() {
		t.Helper()
		l.BW.WriteString("request\n")
		if err := l.Send(time.Now()); err != nil {
			t.Fatalf("Send: %v", err)
		}
	}
	answer := func() {
		t.Helper()
		if s, err := l.BR.ReadString('\n'); err != nil || s != "answer\n" {
			t.Fatalf("the answer = %q, %v", s, err)
		}
	}
	// Each look after a quick write finds nothing (a write the scheduler
	// happened to slow looks unscored): the score falls to half.
	for i := 0; l.send.score > quickScoreMax/2; i++ {
		if i == 50*quickScoreMax {
			t.Fatalf("score still %d after %d looks at a pipe the worker had not answered on", l.send.score, i)
		}
		send()
		answer()
	}
	// Now awaited: the read after Send finds the answer at once. Writes
	// the scheduler slowed to twice the quickest count as slow and look at
	// once (this loop skips them); on a busy machine many do (10 tries
	// failed under go test -count=400).
	for i := 0; i < 50*sampleEvery; i++ {
		start := time.Now()
		send()
		if l.send.looked || time.Since(start) < 2*time.Millisecond {
			answer() // a sampled look, or one after a write timed as slow
			continue
		}
		l.resp.WatchLook()
		answer()
		if look := l.resp.TakeLook(); look != rawio.LookFound {
			t.Fatalf("the read after an awaited Send found %v; want the answer (LookFound)", look)
		}
		return
	}
	t.Fatalf("no Send awaited its answer in %d", 50*sampleEvery)
}

// A worker that answers before the write returns keeps the lane looking at
// once.
func TestSendKeepsLookingWhileLooksFind(t *testing.T) {
	l, _, respW := lanePair(t)
	for i := 0; i < 3*quickScoreMax; i++ {
		respW.Write([]byte("answer\n")) // there before the request is written
		l.BW.WriteString("request\n")
		if err := l.Send(time.Now()); err != nil {
			t.Fatalf("Send: %v", err)
		}
		if s, err := l.BR.ReadString('\n'); err != nil || s != "answer\n" {
			t.Fatalf("the answer = %q, %v", s, err)
		}
	}
	if l.send.score != quickScoreMax || !l.send.looked {
		t.Fatalf("score %d, looked %v; want %d, true", l.send.score, l.send.looked, quickScoreMax)
	}
}

// Send fails as BW.Flush would when the worker closed its request pipe, in
// both ways of sending, and scores nothing.
func TestSendToAClosedPipe(t *testing.T) {
	for _, score := range []int{quickScoreMax, 0} {
		l, reqR, _ := lanePair(t)
		reqR.Close()
		l.send.score = score
		l.BW.WriteString("request\n")
		err := l.Send(time.Now())
		if !errors.Is(err, syscall.EPIPE) {
			t.Fatalf("score %d: Send to a closed pipe = %v; want EPIPE", score, err)
		}
		if l.send.looked || l.BW.Buffered() == 0 {
			t.Fatalf("score %d: looked %v, %d bytes buffered after the failed Send; want false and the request still buffered (§9.3)", score, l.send.looked, l.BW.Buffered())
		}
	}
}

// A lane that awaits notices a worker that became faster than the write:
// the sampled looks find the answer, and it looks at once again. The
// worker answers while the request is written, as a quick one sharing the
// watchdog's CPU does (send.go): inside the wait, never before it. An
// answer written before Send began would be a worker's unsolicited output
// (PROTOCOL.md §9.6), which the pool's check at acquire retires; the poller
// may already have reported it, and a wait begun after that report sleeps
// until the worker's next write (rawio.AwaitAfter), which this worker, like
// the one in CI that hung here, never makes.
func TestSendReturnsToLooking(t *testing.T) {
	l, _, respW := lanePair(t)
	l.send.score = 0
	l.BW.Reset(answeredWhileWritten{l.Req, respW})
	// Five sampled looks that find the answer lift the score from 0 past
	// half: sampleEvery quick writes each. Writes the scheduler slowed
	// count as slow, unsampled and unscored (many, under -race).
	limit := 20 * sampleEvery * (quickScoreMax/2 + 2)
	for i := 0; l.send.score <= quickScoreMax/2; i++ {
		if i == limit {
			t.Fatalf("score still %d after %d answers that came during the write", l.send.score, i)
		}
		l.BW.WriteString("request\n")
		if err := l.Send(time.Now()); err != nil {
			t.Fatalf("Send: %v", err)
		}
		if s, err := l.BR.ReadString('\n'); err != nil || s != "answer\n" {
			t.Fatalf("the answer = %q, %v", s, err)
		}
	}
}

// answeredWhileWritten writes a request, and the worker's answer to it
// before the write returns.
type answeredWhileWritten struct {
	req  io.Writer
	resp *os.File
}

func (a answeredWhileWritten) Write(p []byte) (int, error) {
	n, err := a.req.Write(p)
	if err == nil {
		_, err = a.resp.Write([]byte("answer\n"))
	}
	return n, err
}
