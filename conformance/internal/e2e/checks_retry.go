package e2e

import (
	"fmt"
	"io"
	"strings"

	"github.com/afterburn-dev/afterburn/conformance/internal/expect"
	"github.com/afterburn-dev/afterburn/conformance/internal/vectors"
)

// unreadRequestRetried: §9.3 — a worker that exits right after a complete response may
// already have been handed the next request; if it never read a byte of it, the request goes
// to another worker with its body replayed. So small requests sent at once after such an exit
// all succeed, each with its own response. (Without the retry most rounds lose one to 502.)
// With lanes (§2.5) the dying worker's other lanes are reading while it exits, so a request
// one of them read before the exit is not retried: it gets its own 502 worker_crashed
// (§8.4), never another request's answer.
func unreadRequestRetried(t *T) {
	t.WaitIdle(2)
	before := t.Metrics().Sum("afterburn_worker_restarts_total")
	const rounds = 5
	for round := range rounds {
		r := t.Get("/crash?when=after-response")
		t.Status(r, 200)
		out := make(chan loadResult, 2)
		for i := range 2 {
			id := rid(fmt.Sprintf("unread%d-%d", round, i))
			go func() {
				method, body := "GET", io.Reader(nil) // one bodiless request and one with a body
				if i == 1 {
					method, body = "POST", strings.NewReader("body-"+id)
				}
				r, err := t.DoErr(t.NewRequest(method, "/echo/"+id, body, "X-Request-Id: "+id))
				out <- loadResult{id, r, err}
			}()
		}
		for range 2 {
			x := <-out
			if x.err != nil {
				t.Fatalf("/echo/%s right after a worker's exit: %v", x.id, x.err)
			}
			if x.r.StatusCode == 502 && t.k() > 1 {
				// §2.5, §8.4: read by another lane of the dying worker.
				t.WatchdogError(x.r, 502, "worker_crashed")
				continue
			}
			if x.r.StatusCode != 200 {
				t.Fatalf("/echo/%s right after a worker's exit: got %s; want 200 (§9.3: a request the dying worker never read goes to another worker)", x.id, x.r)
			}
			if err := expect.Echo(&vectors.Echo{Path: str("/echo/" + x.id), RequestID: str(x.id)}, nil, x.r.Expect()); err != nil {
				t.Fatalf("/echo/%s got another request's response? %v\ngot response: %s", x.id, err, x.r)
			}
		}
	}
	if t.cfg.isolated() {
		return // §2.7: each exit ended a worker that had served its one exchange: not a restart
	}
	t.Eventually("a restart per exit", func() (bool, string) {
		now := t.Metrics().Sum("afterburn_worker_restarts_total")
		return now >= before+rounds, fmt.Sprintf("restarts %v, before %v", now, before)
	})
}
