package worker

import (
	"os"
	"testing"
)

// A worker that serves one lane keeps no cancel pipe: SettleLanes closes
// the write end made for an offer (lanes=auto) or a lanes=K the library
// did not take up, which would otherwise stay open for the worker's life.
func TestSettleLanesClosesAnUnusedCancelPipe(t *testing.T) {
	r, wr, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	w := &Worker{InUse: 1, cancelW: wr, Lanes: []*Lane{{}}}
	w.SettleLanes()
	if w.cancelW != nil {
		t.Fatal("the cancel pipe is still the worker's after SettleLanes with one lane")
	}
	if _, err := wr.Write([]byte("x")); err == nil {
		t.Error("the cancel pipe's write end is still open")
	}
}
