package pool

import (
	"os"
	"strings"
	"testing"
)

// renderTable draws a transition table as doc.go shows it: a row per state,
// a column per event, the next state or "-" where the pair is refused.
func renderTable(corner string, states, events []string, next func(s, e int) (string, bool)) string {
	rows := [][]string{append([]string{corner}, events...)}
	for s, st := range states {
		row := []string{st}
		for e := range events {
			cell := "-"
			if n, ok := next(s, e); ok {
				cell = n
			}
			row = append(row, cell)
		}
		rows = append(rows, row)
	}
	widths := make([]int, len(rows[0]))
	for _, row := range rows {
		for i, c := range row {
			widths[i] = max(widths[i], len(c))
		}
	}
	var b strings.Builder
	for _, row := range rows {
		b.WriteString("//\t")
		for i, c := range row {
			if i == len(row)-1 {
				b.WriteString(c)
				break
			}
			b.WriteString(c + strings.Repeat(" ", widths[i]-len(c)+2))
		}
		b.WriteString("\n")
	}
	return b.String()
}

func stateTables() (workers, lanes string) {
	var ws, wes, ls, les []string
	for s := workerState(0); s < workerStates; s++ {
		ws = append(ws, s.String())
	}
	for e := workerEvent(0); e < workerEvents; e++ {
		wes = append(wes, e.String())
	}
	for s := laneState(0); s < laneStates; s++ {
		ls = append(ls, s.String())
	}
	for e := laneEvent(0); e < laneEvents; e++ {
		les = append(les, e.String())
	}
	workers = renderTable("worker", ws, wes, func(s, e int) (string, bool) {
		n, ok := workerTable[workerState(s)][workerEvent(e)]
		return n.String(), ok
	})
	lanes = renderTable("lane", ls, les, func(s, e int) (string, bool) {
		n, ok := laneTable[laneState(s)][laneEvent(e)]
		return n.String(), ok
	})
	return workers, lanes
}

// TestDocShowsTheTables: the map of the house (../doc.go) prints both
// transition tables as state.go holds them, so the two never drift.
func TestDocShowsTheTables(t *testing.T) {
	doc, err := os.ReadFile("../doc.go")
	if err != nil {
		t.Fatal(err)
	}
	workers, lanes := stateTables()
	for _, table := range []string{workers, lanes} {
		if !strings.Contains(string(doc), table) {
			t.Errorf("doc.go does not show this table of state.go; put it there as it is:\n%s", table)
		}
	}
}
