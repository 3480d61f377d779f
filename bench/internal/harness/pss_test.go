package harness

import (
	"math"
	"os"
	"strings"
	"testing"
)

// smapsRollup is /proc/PID/smaps_rollup as Linux 6 writes it.
func smapsRollup(rssKB, pssKB string) string {
	return "55d0c0a00000-7ffd5e5f1000 ---p 00000000 00:00 0                          [rollup]\n" +
		"Rss:              " + rssKB + " kB\n" +
		"Pss:              " + pssKB + " kB\n" +
		"Pss_Dirty:        " + pssKB + " kB\n" +
		"Pss_Anon:         1000 kB\nPss_File:          200 kB\nPss_Shmem:            0 kB\n" +
		"Shared_Clean:      1234 kB\nShared_Dirty:     5678 kB\nPrivate_Clean:       0 kB\nPrivate_Dirty:     100 kB\n" +
		"Referenced:       " + rssKB + " kB\nAnonymous:        1000 kB\nLazyFree:              0 kB\n" +
		"AnonHugePages:         0 kB\nSwap:                  0 kB\nSwapPss:               0 kB\nLocked:                0 kB\n"
}

func TestParseSmapsRollup(t *testing.T) {
	pss, rss, err := parseSmapsRollup(smapsRollup("537080", "69541"))
	if err != nil || pss != 69541 || rss != 537080 {
		t.Errorf("parseSmapsRollup = %d, %d, %v; want Pss 69541, Rss 537080 (not Pss_Dirty, SwapPss)", pss, rss, err)
	}
	for _, bad := range []string{"", "Rss: 1 kB\n", "Rss: 1 kB\nPss: x kB\n", "Rss: 1 kB\nPss: 2 MB\n"} {
		if _, _, err := parseSmapsRollup(bad); err == nil {
			t.Errorf("parseSmapsRollup(%q): no error; want one", bad)
		}
	}
}

// TestSumTreeMemoryAddsEveryProcess: a template of 512 MiB and eight workers forked from it,
// each charged a ninth of the shared pages, add up to about one copy; a process gone
// before it is read is left out.
func TestSumTreeMemoryAddsEveryProcess(t *testing.T) {
	texts := map[int]string{1: smapsRollup("20480", "10240")} // the watchdog: 10 MiB
	pids := []int{1, 2}
	texts[2] = smapsRollup("544768", "60000") // the template
	for pid := 10; pid < 18; pid++ {
		texts[pid] = smapsRollup("544768", "60000")
		pids = append(pids, pid)
	}
	pids = append(pids, 99) // exited
	role := func(pid int) string {
		switch pid {
		case 1:
			return "watchdog"
		case 2:
			return "template"
		}
		return "worker"
	}
	read := func(pid int) (string, error) {
		if s, ok := texts[pid]; ok {
			return s, nil
		}
		return "", os.ErrNotExist
	}
	m, err := sumTreeMemory(pids, role, read)
	if err != nil {
		t.Fatal(err)
	}
	if want := (10240.0 + 9*60000) / 1024; math.Abs(m.PSSMiB-want) > 1e-9 {
		t.Errorf("PSS = %.3f MiB; want %.3f", m.PSSMiB, want)
	}
	if want := (20480.0 + 9*544768) / 1024; math.Abs(m.RSSMiB-want) > 1e-9 {
		t.Errorf("RSS = %.3f MiB; want %.3f", m.RSSMiB, want)
	}
	if len(m.Processes) != 10 || m.Processes[0].Role != "watchdog" || m.Processes[1].Role != "template" || m.Processes[9].Role != "worker" {
		t.Errorf("processes = %+v; want the watchdog, the template and 8 workers, in order", m.Processes)
	}
	if _, err := sumTreeMemory([]int{1}, role, func(int) (string, error) { return "Rss: 1 kB\n", nil }); err == nil ||
		!strings.Contains(err.Error(), "pid 1") {
		t.Errorf("sumTreeMemory of a bad text = %v; want an error naming the pid", err)
	}
}

// TestTreeMemoryReadsThisProcess: the real /proc of the test itself.
func TestTreeMemoryReadsThisProcess(t *testing.T) {
	if _, err := os.Stat("/proc/self/smaps_rollup"); err != nil {
		t.Skip("no /proc/PID/smaps_rollup (Linux 4.14+):", err)
	}
	m, err := treeMemory(os.Getpid(), func(int) string { return "self" })
	if err != nil || m.PSSMiB <= 0 || m.RSSMiB < m.PSSMiB {
		t.Errorf("treeMemory(self) = %+v, %v; want 0 < PSS <= RSS", m, err)
	}
}
