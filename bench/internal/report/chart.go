package report

import (
	"fmt"
	"image"
	"image/color"
	"image/draw"
	"image/png"
	"math"
	"os"

	"golang.org/x/image/font"
	"golang.org/x/image/font/basicfont"
	"golang.org/x/image/math/fixed"

	"github.com/afterburn-dev/afterburn/bench/internal/harness"
)

// Chart draws requests/s of the hello workload per language and mode, one panel per
// concurrency, on a log scale (fork per request is two to three orders of magnitude below
// the rest, which a linear axis would flatten to nothing).
func Chart(path string, r *harness.Results) error {
	const (
		panelW, panelH = 520, 340
		margin         = 60
		barW           = 14
	)
	concs := []string{"c1", "c8"}
	img := image.NewRGBA(image.Rect(0, 0, panelW*len(concs)+margin, panelH+110))
	draw.Draw(img, img.Bounds(), image.White, image.Point{}, draw.Src)
	colors := map[harness.Mode]color.RGBA{
		harness.AfterBurn: {0xd9, 0x48, 0x1c, 0xff},
		harness.Proxy:     {0x3b, 0x6e, 0xb5, 0xff},
		harness.Fork:      {0x88, 0x88, 0x88, 0xff},
		harness.Limit:     {0x2f, 0x9e, 0x5b, 0xff},
		harness.Relay:     {0x8e, 0x44, 0xad, 0xff},
		harness.Ceiling:   {0x22, 0x22, 0x22, 0xff},
	}
	order := []harness.Mode{harness.Fork, harness.Proxy, harness.AfterBurn, harness.Limit, harness.Relay, harness.Ceiling}
	maxRPS := 1.0
	for _, l := range r.Languages {
		for _, m := range order {
			for _, c := range concs {
				if f := l.Mode(m)[harness.Hello][c]; f != nil {
					maxRPS = math.Max(maxRPS, f.RPS.Median)
				}
			}
		}
	}
	top := math.Ceil(math.Log10(maxRPS))
	label(img, margin, 20, fmt.Sprintf("AfterBurn benchmarks %s: hello world, requests/s (log scale), medians", r.Date[:10]))
	for pi, c := range concs {
		x0, y0 := margin+pi*panelW, 50
		plotH := panelH - 60
		yOf := func(v float64) int {
			if v < 1 {
				v = 1
			}
			return y0 + plotH - int(math.Log10(v)/top*float64(plotH))
		}
		label(img, x0+10, y0-8, "concurrency "+c[1:])
		for p := 0.0; p <= top; p++ {
			y := yOf(math.Pow(10, p))
			hline(img, x0, x0+panelW-30, y, color.RGBA{0xdd, 0xdd, 0xdd, 0xff})
			if pi == 0 {
				label(img, 4, y+4, fmt.Sprintf("%.0f", math.Pow(10, p)))
			}
		}
		groupW := (panelW - 40) / max(1, len(r.Order))
		for li, name := range r.Order {
			l := r.Languages[name]
			gx := x0 + 10 + li*groupW
			for mi, m := range order {
				f := l.Mode(m)[harness.Hello][c]
				if f == nil {
					continue
				}
				bx := gx + mi*(barW+2)
				rect(img, bx, yOf(f.RPS.Median), bx+barW, y0+plotH, colors[m])
			}
			label(img, gx+10, y0+plotH+16, name)
		}
	}
	lx := margin
	for _, m := range order {
		rect(img, lx, panelH+60, lx+12, panelH+72, colors[m])
		label(img, lx+16, panelH+71, string(m))
		lx += 110
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := png.Encode(f, img); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func rect(img *image.RGBA, x0, y0, x1, y1 int, c color.RGBA) {
	draw.Draw(img, image.Rect(x0, y0, x1, y1), &image.Uniform{c}, image.Point{}, draw.Src)
}

func hline(img *image.RGBA, x0, x1, y int, c color.RGBA) { rect(img, x0, y, x1, y+1, c) }

func label(img *image.RGBA, x, y int, s string) {
	d := font.Drawer{Dst: img, Src: image.Black, Face: basicfont.Face7x13, Dot: fixed.P(x, y)}
	d.DrawString(s)
}
