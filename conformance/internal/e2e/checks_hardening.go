package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Checks of issue 17's hardening: responses bound to their exchange (§4.6),
// descriptors (§2.2), field names with underscores (§5.5).

// lateWriter is PROTOCOL.md §4.6: a whole response written on the response
// pipe by user code after its handler returned — by a thread of the worker
// (how=late) or by a child process (how=child) — lands while the next
// request on the same worker is being served. That request must get its
// own answer or an error, never the stale bytes.
func lateWriter(how string) func(t *T) {
	return func(t *T) {
		t.WaitIdle(2)
		perr := t.Metric("afterburn_protocol_errors_total", "kind", "exchange")
		unsolicited := t.Restarts("unsolicited_output")
		badResponse := t.Restarts("bad_response")
		m := t.JSON(t.Get("/garbage?when="+how+"&ms=300"), 200)
		if m["late"] != true {
			t.Fatalf("%s: got %v; want late true", t.lastReq(), m)
		}
		// The worker that answered became idle last, so it serves this one
		// (§10.3); the stale response arrives while it sleeps.
		r := t.Get("/sleep?ms=900")
		switch {
		case strings.Contains(string(r.Body), "stale"):
			t.Fatalf("%s: got the late writer's response %s", t.lastReq(), r)
		case r.StatusCode == 502:
			// §4.6: the head without this exchange's token failed it.
			t.WatchdogError(r, 502, "bad_response")
			t.WaitMetric(perr+1, "afterburn_protocol_errors_total", "kind", "exchange")
			t.ReplacedOnceIdle(2, "bad_response", badResponse)
		case r.StatusCode == 200 && t.cfg.isolated():
			// §2.7: a fresh worker served it; the late writer's worker had
			// ended, its pipes with it.
			if m := t.JSON(r, 200); m["slept_ms"] != float64(900) {
				t.Fatalf("%s: got %v; want slept_ms 900", t.lastReq(), m)
			}
		case r.StatusCode == 200:
			// A slow machine dispatched the request only after the stale
			// bytes had arrived: §9.6 replaced the worker first.
			if m := t.JSON(r, 200); m["slept_ms"] != float64(900) {
				t.Fatalf("%s: got %v; want slept_ms 900", t.lastReq(), m)
			}
			t.WaitMetric(unsolicited+1, "afterburn_worker_restarts_total", "reason", "unsolicited_output")
		default:
			t.Fatalf("%s: got %s; want 502 bad_response (or 200 from another worker)", t.lastReq(), r)
		}
		for i := 0; i < 3; i++ {
			echoesOwnIDs(t, 2)
		}
	}
}

// inheritedDescriptor is PROTOCOL.md §2.2: the watchdog is started with a
// descriptor open past fd 2, as a shell or supervisor may leave one, and no
// worker may hold it.
func inheritedDescriptor(t *T) {
	marker := filepath.Join(os.TempDir(), rid("afterburn-inherited"))
	f, err := os.Create(marker)
	if err != nil {
		t.Fatalf("creating %s: %v", marker, err)
	}
	defer os.Remove(marker)
	defer f.Close()
	// As fd 10, as a shell leaves one: the workers' fds 3 and 4 would
	// replace a marker on fd 3 or 4 anyway.
	t.StartWatchdogInheriting([]string{"-workers", "2"}, nil, []*os.File{nil, nil, nil, nil, nil, nil, nil, f})
	if t.cfg.isolated() {
		t.WaitIdle(2) // §2.7, §9.2: ready with the template, before its first spares
	}
	workers := t.Workers()
	if len(workers) == 0 {
		t.Fatalf("no worker processes under the watchdog")
	}
	for _, pid := range workers {
		for _, p := range processTree(pid) {
			entries, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", p))
			if err != nil {
				continue // exited meanwhile
			}
			for _, e := range entries {
				target, _ := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", p, e.Name()))
				if target == marker {
					t.Fatalf("worker process %d holds the watchdog's inherited descriptor as fd %s (%s)", p, e.Name(), marker)
				}
			}
		}
	}
	echoesOwnIDs(t, 2)
}

// processTree is pid and its descendants (a worker started through
// /bin/sh -c exec is the shell's image replaced, but a launcher may fork).
func processTree(pid int) []int {
	out := []int{pid}
	kids, _ := children(pid)
	for _, k := range kids {
		out = append(out, processTree(k)...)
	}
	return out
}

// underscoreNames is PROTOCOL.md §5.5: a client's X_Forwarded_For must not
// shadow or merge into X-Forwarded-For where a library maps names CGI-style.
func underscoreNames(t *T) {
	r := t.Get("/echo/underscore", "X-Forwarded-For: 203.0.113.7", "X_Forwarded_For: 198.51.100.66")
	e := t.Echo(r)
	var got []string
	for _, h := range e.Headers {
		if len(h) == 2 && h[0] == "x-forwarded-for" {
			got = append(got, h[1])
		}
	}
	if len(got) != 1 || got[0] != "203.0.113.7" {
		b, _ := json.Marshal(e.Headers)
		t.Fatalf("%s: the handler saw x-forwarded-for %q; want only [203.0.113.7] (all fields: %s)", t.lastReq(), got, b)
	}
}
