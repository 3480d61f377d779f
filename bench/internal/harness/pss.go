package harness

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// Memory of a process tree as Linux accounts it in /proc/PID/smaps_rollup. PSS (proportional
// set size) charges each resident page to the processes that map it in equal parts, so the
// PSS of every process of a tree adds up to what the tree holds: a page that eight workers
// forked from one template share counts once in the sum, not eight times as RSS would count
// it (bench/README.md, "Fork mode").

// ProcMemory is one process's share.
type ProcMemory struct {
	PID    int    `json:"pid"`
	Role   string `json:"role"` // watchdog, template or worker
	PSSKiB int64  `json:"pss_kib"`
	RSSKiB int64  `json:"rss_kib"`
}

// TreeMemory is a tree's processes and their sums.
type TreeMemory struct {
	PSSMiB    float64      `json:"pss_mib"`
	RSSMiB    float64      `json:"rss_mib"`
	Processes []ProcMemory `json:"processes"`
}

// parseSmapsRollup reads the Pss: and Rss: lines of /proc/PID/smaps_rollup, in kB.
func parseSmapsRollup(text string) (pss, rss int64, err error) {
	var seenPSS, seenRSS bool
	sc := bufio.NewScanner(strings.NewReader(text))
	for sc.Scan() {
		name, rest, ok := strings.Cut(sc.Text(), ":")
		if !ok || (name != "Pss" && name != "Rss") {
			continue
		}
		f := strings.Fields(rest)
		if len(f) != 2 || f[1] != "kB" {
			return 0, 0, fmt.Errorf("smaps_rollup: bad %s line %q", name, sc.Text())
		}
		v, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			return 0, 0, fmt.Errorf("smaps_rollup: bad %s line %q", name, sc.Text())
		}
		if name == "Pss" {
			pss, seenPSS = v, true
		} else {
			rss, seenRSS = v, true
		}
	}
	if !seenPSS || !seenRSS {
		return 0, 0, fmt.Errorf("smaps_rollup without Pss: and Rss: lines")
	}
	return pss, rss, nil
}

// sumTreeMemory adds up the memory of pids (the root first), read by read (a pid's
// smaps_rollup text). role names each process. A process that exits before it is read is
// left out: it holds nothing any more.
func sumTreeMemory(pids []int, role func(pid int) string, read func(pid int) (string, error)) (*TreeMemory, error) {
	t := &TreeMemory{}
	var pss, rss int64
	for _, pid := range pids {
		text, err := read(pid)
		if err != nil {
			if os.IsNotExist(err) {
				continue
			}
			return nil, err
		}
		p, r, err := parseSmapsRollup(text)
		if err != nil {
			return nil, fmt.Errorf("pid %d: %v", pid, err)
		}
		pss, rss = pss+p, rss+r
		t.Processes = append(t.Processes, ProcMemory{PID: pid, Role: role(pid), PSSKiB: p, RSSKiB: r})
	}
	if len(t.Processes) == 0 {
		return nil, fmt.Errorf("no process of the tree could be read")
	}
	t.PSSMiB, t.RSSMiB = float64(pss)/1024, float64(rss)/1024
	return t, nil
}

// treeMemory reads the memory of root and every process below it.
func treeMemory(root int, role func(pid int) string) (*TreeMemory, error) {
	return sumTreeMemory(append([]int{root}, descendants(root)...), role, func(pid int) (string, error) {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/smaps_rollup", pid))
		return string(b), err
	})
}
