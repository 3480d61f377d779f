package afterburn

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
)

// Logf writes a log line for request r to the worker's stderr, which the watchdog
// logs (PROTOCOL.md §9.5), tagged with the request id: "[ID] text". With lanes
// several requests are in flight at once, and the tag says whose line it is (§2.5).
// Arguments are handled as in fmt.Printf; a newline is added unless the text ends
// with one, and every line of a text of several lines is tagged. The text goes out
// in one write, so lines of concurrent requests do not interleave. For a request
// that Serve did not make, Logf writes the text untagged to os.Stderr.
func Logf(r *http.Request, format string, args ...any) {
	var w io.Writer = os.Stderr
	var tag []byte
	if ex := exchangeOf(r.Context()); ex != nil {
		if ex.c.log != nil {
			w = ex.c.log
		}
		tag = append(append([]byte{'['}, ex.id...), "] "...)
	}
	w.Write(appendLog(nil, tag, fmt.Sprintf(format, args...)))
}

// appendLog appends text to b with tag before each of its lines, and a final newline.
func appendLog(b, tag []byte, text string) []byte {
	for {
		line, rest, more := strings.Cut(text, "\n")
		b = append(append(b, tag...), line...)
		b = append(b, '\n')
		if !more || rest == "" {
			return b
		}
		text = rest
	}
}
