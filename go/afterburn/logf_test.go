package afterburn

import (
	"net/http"
	"testing"
)

func TestLogf(t *testing.T) {
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		Logf(r, "one %d", 1)
		Logf(r, "two\nlines\n")
	})
	_, logs, err := serveString(t, h, "GET /x HTTP/1.1\r\nHost: fn\r\nAfterBurn-Request-Id: r-7\r\n\r\n")
	if err != nil {
		t.Fatal(err)
	}
	if want := "[r-7] one 1\n[r-7] two\n[r-7] lines\n"; logs != want {
		t.Fatalf("got %q; want %q", logs, want)
	}
}
