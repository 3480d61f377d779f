package harness

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// fakePool is one worker slot on a fake clock: each request takes 1 ms; after a kill, requests
// fail (502) until the replacement is up, replaceAfter later.
type fakePool struct {
	clock        time.Time
	pid          int
	killedAt     time.Time
	replaceAfter time.Duration
	killed       []int
}

func (f *fakePool) probe(limit time.Duration) crashProbe {
	return crashProbe{
		ask: func() (int, error) {
			f.clock = f.clock.Add(time.Millisecond)
			if !f.killedAt.IsZero() {
				if f.clock.Sub(f.killedAt) < f.replaceAfter {
					return 0, errors.New("GET /pid = 502")
				}
				f.pid++
				f.killedAt = time.Time{}
			}
			return f.pid, nil
		},
		kill:  func(pid int) error { f.killed = append(f.killed, pid); f.killedAt = f.clock; return nil },
		now:   func() time.Time { return f.clock },
		limit: limit,
	}
}

func TestCrashToAnsweringTimesFromTheKillToTheNewPidsAnswer(t *testing.T) {
	f := &fakePool{clock: time.Unix(0, 0), pid: 100, replaceAfter: 7 * time.Millisecond}
	got, err := f.probe(time.Second).crashToAnswering()
	// Requests at +1..+6 ms fail; the one answered at +7 ms comes from pid 101.
	if err != nil || got != 7*time.Millisecond {
		t.Errorf("crashToAnswering = %v, %v; want 7ms", got, err)
	}
	if len(f.killed) != 1 || f.killed[0] != 100 {
		t.Errorf("killed %v; want [100], the pid that answered before the crash", f.killed)
	}
}

func TestCrashToAnsweringGivesUpAtItsLimit(t *testing.T) {
	f := &fakePool{clock: time.Unix(0, 0), pid: 100, replaceAfter: time.Hour}
	_, err := f.probe(50 * time.Millisecond).crashToAnswering()
	if err == nil || !strings.Contains(err.Error(), "no other pid answered") || !strings.Contains(err.Error(), "502") {
		t.Errorf("crashToAnswering = %v; want an error naming the limit and the last failure", err)
	}
}

func TestCrashToAnsweringIgnoresTheOldPid(t *testing.T) {
	// A pool that still answers from the killed pid (the kill did not land) is not replaced.
	now := time.Unix(0, 0)
	p := crashProbe{
		ask:   func() (int, error) { now = now.Add(time.Millisecond); return 100, nil },
		kill:  func(int) error { return nil },
		now:   func() time.Time { return now },
		limit: 10 * time.Millisecond,
	}
	if _, err := p.crashToAnswering(); err == nil {
		t.Error("crashToAnswering with the same pid answering: no error; want one")
	}
}
