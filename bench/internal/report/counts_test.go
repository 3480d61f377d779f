package report

import (
	"bytes"
	"testing"

	"github.com/afterburn-dev/afterburn/bench/internal/harness"
)

// TestCountsMarkdown: per configuration the instructions (with their ratio to the bare
// server's), system calls and context switches per request; the watchdog's goal; the calls
// by name when the method gave them.
func TestCountsMarkdown(t *testing.T) {
	native := func(vol, invol, rw float64) *harness.HostCost {
		return &harness.HostCost{Requests: 20000,
			Front: harness.PerRequest{CPUus: 70, Voluntary: vol, Involuntary: invol, RWCalls: rw},
			Tree:  harness.PerRequest{CPUus: 80, Voluntary: vol + 1, Involuntary: invol, RWCalls: rw + 2}}
	}
	c := &harness.Counts{Date: "2026-11-25T12:00:00Z", Machine: "test", Placement: "pinned", Workers: 2,
		Requests: 2000, NativeRequests: 20000, SyscallMethod: harness.SyscallsStrace,
		Configs: []*harness.CountsConfig{
			{Key: harness.Relay, Runs: []*harness.CountsRun{{Workload: harness.Hello, Concurrency: "c1",
				Instructions: 2600, Syscalls: 6, Native: native(1.25, 0.75, 4),
				SyscallsByName: map[string]float64{"read": 2, "write": 2, "epoll_wait": 2, "futex": 0.001}}}},
			{Key: harness.WatchdogC, Runs: []*harness.CountsRun{{Workload: harness.Hello, Concurrency: "c1",
				Instructions: 18200, Syscalls: 7.5, Native: native(2.5, 1.5, 5.5)}}},
			{Key: harness.WatchdogCNetHTTP, Runs: []*harness.CountsRun{{Workload: harness.Hello, Concurrency: "c1",
				Instructions: 63600, Syscalls: 11.3, Native: native(3, 1.5, 6)}}},
			{Key: harness.Ceiling, Runs: []*harness.CountsRun{{Workload: harness.Hello, Concurrency: "c1",
				Instructions: 35600, Syscalls: 6.5, Native: native(1.8, 0.7, 3)}}},
		},
		Targets: []harness.Target{
			{Name: "hello c1 watchdog user instructions per request", Value: 18200, Min: 18200, Max: 18200, Goal: "<= 20000", Met: true},
			{Name: "hello c1 watchdog system calls per request", Value: 7.5, Min: 7.5, Max: 7.5, Goal: "<= 8.00 (relay's 6.00 + 2)", Met: true},
			{Name: "hello c1 watchdog (net/http only) instructions ÷ bare net/http's", Value: 1.79, Min: 1.79, Max: 1.79, Goal: "<= 1.5"},
		},
	}
	var b bytes.Buffer
	CountsMarkdown(&b, c)
	mustContain(t, b.String(),
		"dumped after 2000 requests on connections opened beforehand",
		"| relay (C relay + C child) | hello | 1 | 2.6k | 0.07× | 6.00 | 4.00 | 2.00 (1.25 + 0.75) | 3.00 | 70.0 |",
		"| watchdog + C child | hello | 1 | 18.2k | 0.51× | 7.50 | 5.50 | 4.00 (2.50 + 1.50) | 5.00 | 70.0 |",
		"| watchdog (net/http only) + C child | hello | 1 | 63.6k | 1.79× | 11.3 | 6.00 | 4.50 (3.00 + 1.50) | 5.50 | 70.0 |",
		"| bare Go server | hello | 1 | 35.6k | 1.00× | 6.50 |",
		"at most 20k user instructions per request for hello",
		"| hello c1 watchdog user instructions per request | 18200 | <= 20000 | yes |",
		"| hello c1 watchdog system calls per request | 7.50 | <= 8.00 (relay's 6.00 + 2) | yes |",
		"| hello c1 watchdog (net/http only) instructions ÷ bare net/http's | 1.79 | <= 1.5 | **no** |",
		"| relay (C relay + C child) | hello | 1 | epoll_wait 2.00, read 2.00, write 2.00 |",
	)
}
