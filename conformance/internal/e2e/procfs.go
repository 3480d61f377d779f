package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// procStat returns the fields of /proc/PID/stat after the command name:
// [0] state, [1] ppid, [2] pgrp, ...
func procStat(pid int) ([]string, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return nil, err
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return nil, fmt.Errorf("/proc/%d/stat: %q", pid, s)
	}
	return strings.Fields(s[i+1:]), nil
}

// children lists the live (not zombie) processes whose parent is pid.
func children(pid int) ([]int, error) {
	dirs, err := filepath.Glob("/proc/[0-9]*")
	if err != nil {
		return nil, err
	}
	var out []int
	for _, d := range dirs {
		c, err := strconv.Atoi(filepath.Base(d))
		if err != nil {
			continue
		}
		f, err := procStat(c)
		if err != nil || len(f) < 3 {
			continue
		}
		if f[1] == strconv.Itoa(pid) && f[0] != "Z" {
			out = append(out, c)
		}
	}
	return out, nil
}

// alive reports whether pid exists and is not a zombie.
func alive(pid int) bool {
	f, err := procStat(pid)
	return err == nil && len(f) > 0 && f[0] != "Z"
}

// pgrp returns the process group of pid.
func pgrp(pid int) (int, error) {
	f, err := procStat(pid)
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(f[2])
}

// vmHWM returns the peak resident set size of pid in bytes.
func vmHWM(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			f := strings.Fields(rest)
			if len(f) == 2 && f[1] == "kB" {
				kb, err := strconv.ParseInt(f[0], 10, 64)
				return kb << 10, err
			}
		}
	}
	return 0, fmt.Errorf("/proc/%d/status has no VmHWM", pid)
}

// Workers returns the live worker processes: the watchdog's children but the
// template, which /_/ready names, and the template's children, which a single
// fork makes (§2.6, §9.2).
func (t *T) Workers() []int {
	c, err := children(t.WD.Pid())
	if err != nil {
		t.Skipf("cannot read /proc: %v", err)
	}
	if _, st := t.ReadyStatus(); st != nil && st.TemplatePid > 0 {
		c = slices.DeleteFunc(c, func(pid int) bool { return pid == st.TemplatePid })
		// §2.6: workers of the single fork are the template's children.
		if kids, err := children(st.TemplatePid); err == nil {
			c = append(c, kids...)
		}
	}
	return c
}
