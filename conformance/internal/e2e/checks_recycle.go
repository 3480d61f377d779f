package e2e

import (
	"fmt"
	"strings"
	"sync"
)

// recycleUnderLoad: §9.7 — with max_requests 10, four clients sending 40 requests each through
// two workers make them due for recycling, and every request gets its own response: recycling
// drops nothing. (How many recycles complete depends on how fast a successor starts: a worker
// serves on meanwhile. At least one must.)
func recycleUnderLoad(t *T) {
	t.WaitIdle(2)
	before := t.Restarts("recycled")
	out := make(chan loadResult, 160)
	var wg sync.WaitGroup
	for c := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 40 {
				id := rid(fmt.Sprintf("recycle%d-%d", c, i))
				r, err := t.DoErr(t.NewRequest("POST", "/echo/"+id, strings.NewReader("body-"+id), "X-Request-Id: "+id))
				out <- loadResult{id, r, err}
			}
		}()
	}
	wg.Wait()
	close(out)
	for x := range out {
		checkOwnEcho(t, x)
	}
	t.Eventually("workers recycled", func() (bool, string) {
		now := t.Restarts("recycled")
		return now >= before+1, fmt.Sprintf("restarts{reason=recycled} %v, before %v", now, before)
	})
}
