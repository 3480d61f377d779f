//go:build !linux

package spawn

import "os"

// forkPipes: fork mode needs Linux (§2.6); elsewhere plain os.Pipe files.
type forkPipes struct {
	reqW, respR, outR, errR, reqR *os.File
	theirs                        [4]int
	files                         [3]*os.File
}

func newForkPipes() (*forkPipes, error) {
	var ends [4][2]*os.File
	for i := range ends {
		r, w, err := os.Pipe()
		if err != nil {
			for _, e := range ends[:i] {
				e[0].Close()
				e[1].Close()
			}
			return nil, err
		}
		ends[i] = [2]*os.File{r, w}
	}
	return &forkPipes{
		reqW: ends[0][1], reqR: ends[0][0], respR: ends[1][0], outR: ends[2][0], errR: ends[3][0],
		theirs: [4]int{int(ends[0][0].Fd()), int(ends[1][1].Fd()), int(ends[2][1].Fd()), int(ends[3][1].Fd())},
		files:  [3]*os.File{ends[1][1], ends[2][1], ends[3][1]},
	}, nil
}

func (p *forkPipes) closeTheirs() {
	for _, f := range p.files {
		f.Close()
	}
}
