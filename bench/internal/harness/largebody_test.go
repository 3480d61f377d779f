package harness

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"testing/iotest"
)

// The body is produced in pieces of any size and checked in pieces of any size.
func TestPatternRoundTrip(t *testing.T) {
	const size = 3*patternPeriod*256 + 77
	var sent bytes.Buffer
	if _, err := io.Copy(&sent, iotest.OneByteReader(io.LimitReader(&patternReader{}, size))); err != nil {
		t.Fatal(err)
	}
	for i, b := range sent.Bytes() {
		if b != byte(i%patternPeriod) {
			t.Fatalf("byte %d is %d, want %d", i, b, i%patternPeriod)
		}
	}
	for _, piece := range []int{1, 250, 251, 4096, size} {
		c := &patternChecker{}
		for p := sent.Bytes(); len(p) > 0; p = p[min(piece, len(p)):] {
			if _, err := c.Write(p[:min(piece, len(p))]); err != nil {
				t.Fatalf("pieces of %d: %v", piece, err)
			}
		}
	}
}

// An echo that lost, repeated or altered a byte fails the check.
func TestPatternCheckerCatchesCorruption(t *testing.T) {
	good, _ := io.ReadAll(io.LimitReader(&patternReader{}, 10_000))
	lost := append(bytes.Clone(good[:5000]), good[5001:]...)
	repeated := append(bytes.Clone(good[:5000]), good[4999:]...)
	altered := bytes.Clone(good)
	altered[9999] ^= 1
	for name, body := range map[string][]byte{"lost": lost, "repeated": repeated, "altered": altered} {
		if _, err := (&patternChecker{}).Write(body); err == nil {
			t.Errorf("%s byte not caught", name)
		}
	}
}

func TestEchoOnce(t *testing.T) {
	echo := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(w, r.Body)
	}))
	defer echo.Close()
	if _, err := echoOnce(echo.URL, 1<<20); err != nil {
		t.Fatal(err)
	}
	short := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(w, io.LimitReader(r.Body, 1000))
	}))
	defer short.Close()
	if _, err := echoOnce(short.URL, 1<<20); err == nil {
		t.Error("a short echo was accepted")
	}
}

// TestParseEchoTimes: the large-body figure is made of exactly largeBodyReps positive
// durations; anything else the client printed is an error, not a figure.
func TestParseEchoTimes(t *testing.T) {
	got, err := parseEchoTimes([]byte("300\n100\n200\n"))
	if err != nil || len(got) != 3 || got[0] != 300 || got[2] != 200 {
		t.Fatalf("parseEchoTimes = %v, %v", got, err)
	}
	for _, bad := range []string{"", "100\n200\n", "100\n200\n300\n400\n", "100\nx\n300\n", "100\n0\n300\n"} {
		if got, err := parseEchoTimes([]byte(bad)); err == nil {
			t.Errorf("parseEchoTimes(%q) = %v, want an error", bad, got)
		}
	}
}
