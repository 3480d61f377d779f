package wire

import (
	"context"
	"errors"
	"regexp"
	"sync"
	"time"

	"github.com/afterburn-dev/afterburn/conformance/internal/check"
	"github.com/afterburn-dev/afterburn/conformance/internal/vectors"
)

// Config is what the wire layer needs.
type Config struct {
	Function string             // the fixture command, run as /bin/sh -c "exec FUNCTION"
	Files    []*vectors.File    // the loaded vectors
	Run      *regexp.Regexp     // selects vector ids; nil selects all
	Timeout  time.Duration      // per vector
	Parallel int                // vectors at once, each in its own process
	Lanes    int                // >1: start the fixture with that many lanes and run each vector on a lane other than 1 (§2.5)
	Sections func(string) bool  // reports whether the spec has a section
	Report   func(check.Result) // receives results in vector order
}

// Meta describes a vector as a check.
func Meta(v *vectors.Vector) check.Meta {
	return check.Meta{ID: v.ID, Layer: "wire", Section: v.Section, Level: check.Level(v.Level), Description: v.Description}
}

// RunLayer runs every selected vector and reports each result in order.
func RunLayer(ctx context.Context, c Config) {
	var selected []*vectors.Vector
	for _, f := range c.Files {
		for i := range f.Vectors {
			v := &f.Vectors[i]
			if c.Run == nil || c.Run.MatchString(v.ID) {
				selected = append(selected, v)
			}
		}
	}
	par := c.Parallel
	if par < 1 {
		par = 1
	}
	var mu sync.Mutex
	next, done := 0, map[int]check.Result{}
	emit := func(i int, r check.Result) {
		mu.Lock()
		defer mu.Unlock()
		done[i] = r
		for {
			r, ok := done[next]
			if !ok {
				return
			}
			delete(done, next)
			next++
			c.Report(r)
		}
	}
	sem := make(chan struct{}, par)
	var wg sync.WaitGroup
	for i, v := range selected {
		m := Meta(v)
		if r, bad := m.SectionResult(c.Sections); bad {
			emit(i, r)
			continue
		}
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			start := time.Now()
			vctx, cancel := timeoutCtx(ctx, c.Timeout)
			err := RunOnLane(vctx, c.Function, v, c.Lanes, i)
			cancel()
			var skip *check.SkipError
			if errors.As(err, &skip) {
				emit(i, m.Result(check.Skip, skip.Reason, time.Since(start)))
				return
			}
			if err != nil {
				emit(i, m.Result(check.Fail, err.Error(), time.Since(start)))
				return
			}
			emit(i, m.Result(check.Pass, "", time.Since(start)))
		}()
	}
	wg.Wait()
}
