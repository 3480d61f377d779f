package afterburn

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
)

// Logf writes a log line for request r to the worker's stderr, which the watchdog
// logs (PROTOCOL.md §9.5), tagged with the request id: "[ID] text". With lanes
// several requests are in flight at once, and the tag says whose line it is (§2.5).
// Arguments are handled as in fmt.Printf; a newline is added unless the text ends
// with one, and every line of a text of several lines is tagged. The text goes out
// in one write, so lines of concurrent requests do not interleave. For a request
// that Serve did not make, Logf writes the text untagged to os.Stderr.
//
// When the watchdog runs with log_format=json (AFTERBURN_LOG_FORMAT=json, §2.3),
// the text is instead one JSON object on one line, {"request_id":"ID","msg":"text"}
// (a text of several lines is one msg), which the watchdog merges into its own
// JSON line.
func Logf(r *http.Request, format string, args ...any) {
	var w io.Writer = os.Stderr
	var id string
	ex := exchangeOf(r.Context())
	if ex != nil {
		if ex.c.log != nil {
			w = ex.c.log
		}
		id = ex.id
	}
	text := fmt.Sprintf(format, args...)
	if logJSON() {
		w.Write(appendLogJSON(nil, id, text))
		return
	}
	var tag []byte
	if ex != nil {
		tag = append(append([]byte{'['}, id...), "] "...)
	}
	w.Write(appendLog(nil, tag, text))
}

// logJSON reports whether AFTERBURN_LOG_FORMAT asks for JSON lines (PROTOCOL.md
// §2.3, §9.5); the environment is read once. A variable so that tests can set it.
var logJSON = sync.OnceValue(func() bool { return jsonLogFormat(os.Getenv) })

// jsonLogFormat: json is the one value that asks for JSON lines; text, unset or
// anything else keeps the tagged text lines.
func jsonLogFormat(getenv func(string) string) bool {
	return getenv("AFTERBURN_LOG_FORMAT") == "json"
}

// logRecord is a Logf line in json mode; request_id is left out for a request
// that Serve did not make.
type logRecord struct {
	RequestID string `json:"request_id,omitempty"`
	Msg       string `json:"msg"`
}

// appendLogJSON appends text as one JSON line for request id. encoding/json
// replaces bytes that are not UTF-8, so the line is valid JSON whatever text holds.
func appendLogJSON(b []byte, id, text string) []byte {
	buf := bytes.NewBuffer(b)
	enc := json.NewEncoder(buf)
	enc.SetEscapeHTML(false)
	enc.Encode(logRecord{RequestID: id, Msg: strings.TrimSuffix(text, "\n")}) // cannot fail: two strings
	return buf.Bytes()
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
