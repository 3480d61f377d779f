package obs

import (
	"bytes"
	"encoding/json"
	"strconv"
	"time"
	"unicode/utf8"
)

// log_format=json (PROTOCOL.md §9.5, §10.2): every line the watchdog writes
// is one JSON object on one line, with "time" (RFC 3339, UTC, milliseconds),
// "level" and "msg", and the fields of its kind:
//
//	{"time":"…","level":"info","msg":"listening on 127.0.0.1:8080"}
//	{"time":"…","level":"info","msg":"access","request_id":"…","method":"GET","path":"/","status":200,"bytes":2,"duration_ms":0.412,"worker":1}
//	{"time":"…","level":"info","msg":"text","worker":1,"pid":4242,"stream":"stderr"}
//
// A worker line that is itself a JSON object (a library's request logger in
// json mode, AFTERBURN_LOG_FORMAT §2.3) is merged: its keys are kept and
// time, level, worker, pid and stream added where it has none. Anything else
// a worker writes, invalid UTF-8 and the pieces of a split line included,
// becomes the "msg" string, so every line is valid JSON whatever the worker
// wrote.

// appendJSONHead appends `{"time":"<t>","level":"<level>","msg":` and leaves
// the msg value to the caller.
func appendJSONHead(b []byte, t time.Time, level string) []byte {
	b = append(b, `{"time":"`...)
	b = appendStamp(b, t)
	b = append(b, `","level":"`...)
	b = append(b, level...)
	return append(b, `","msg":`...)
}

// appendOwnJSON is logf's line in json mode.
func appendOwnJSON(b []byte, level string, msg []byte) []byte {
	b = appendJSONHead(b, time.Now(), level)
	b = appendJSONString(b, msg)
	return append(b, "}\n"...)
}

// AppendWorkerJSON is workerLine's line in json mode.
func AppendWorkerJSON(b []byte, id, pid int, stream string, line []byte) []byte {
	now := time.Now()
	if obj := bytes.TrimSpace(line); len(obj) > 0 && obj[0] == '{' && utf8.Valid(obj) && json.Valid(obj) {
		return appendMerged(b, now, id, pid, stream, obj)
	}
	b = appendJSONHead(b, now, levelInfo)
	b = appendJSONString(b, line)
	return appendWorkerFields(b, id, pid, stream, nil)
}

// appendWorkerFields appends ,"worker":…,"pid":…,"stream":… (each unless has
// names it) and the closing brace.
func appendWorkerFields(b []byte, id, pid int, stream string, has map[string]bool) []byte {
	if !has["worker"] {
		b = append(b, `,"worker":`...)
		b = strconv.AppendInt(b, int64(id), 10)
	}
	if !has["pid"] {
		b = append(b, `,"pid":`...)
		b = strconv.AppendInt(b, int64(pid), 10)
	}
	if !has["stream"] {
		b = append(b, `,"stream":`...)
		b = appendJSONString(b, []byte(stream))
	}
	return append(b, "}\n"...)
}

// appendMerged appends the worker's JSON object obj with the watchdog's
// fields it lacks: time and level first, its own keys in its order, then
// worker, pid and stream.
func appendMerged(b []byte, now time.Time, id, pid int, stream string, obj []byte) []byte {
	has := objectKeys(obj)
	b = append(b, '{')
	sep := false // a field was written: the next needs a comma
	if !has["time"] {
		b = append(b, `"time":"`...)
		b = appendStamp(b, now)
		b = append(b, '"')
		sep = true
	}
	if !has["level"] {
		if sep {
			b = append(b, ',')
		}
		b = append(b, `"level":"`+levelInfo+`"`...)
		sep = true
	}
	inner := bytes.TrimSpace(obj[1 : len(obj)-1]) // obj is a valid object: {…}
	if len(inner) > 0 {
		if sep {
			b = append(b, ',')
		}
		b = append(b, inner...)
		sep = true
	}
	return appendWorkerFields(b, id, pid, stream, has)
}

// objectKeys returns the top-level keys of the valid JSON object obj.
func objectKeys(obj []byte) map[string]bool {
	keys := map[string]bool{}
	dec := json.NewDecoder(bytes.NewReader(obj))
	dec.Token() // {
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			break
		}
		if k, ok := tok.(string); ok {
			keys[k] = true
		}
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			break
		}
	}
	return keys
}

// AppendAccessJSON is the access-log line of §9.5 in json mode.
func AppendAccessJSON(b []byte, e *AccessEntry, d time.Duration) []byte {
	b = appendJSONHead(b, e.Start, levelInfo)
	b = append(b, `"access","request_id":`...)
	b = appendJSONString(b, []byte(e.RequestID))
	b = append(b, `,"method":`...)
	b = appendJSONString(b, []byte(e.Method))
	b = append(b, `,"path":`...)
	b = appendJSONString(b, []byte(e.Path))
	b = append(b, `,"status":`...)
	b = strconv.AppendInt(b, int64(e.Status), 10)
	b = append(b, `,"bytes":`...)
	b = strconv.AppendInt(b, e.Bytes, 10)
	b = append(b, `,"duration_ms":`...)
	b = appendMillis(b, d)
	b = append(b, `,"worker":`...)
	if e.Worker > 0 {
		b = strconv.AppendInt(b, int64(e.Worker), 10)
	} else {
		b = append(b, "null"...)
	}
	return append(b, "}\n"...)
}

const hexDigits = "0123456789abcdef"

// appendJSONString appends s as a JSON string. Bytes that are not UTF-8
// become U+FFFD, as encoding/json does, so the line stays valid JSON (RFC
// 8259 §8.1) whatever a worker wrote; control characters are escaped, and
// U+2028 and U+2029 too, for JavaScript readers.
func appendJSONString(b, s []byte) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRune(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i++
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, `\u202`...)
			b = append(b, hexDigits[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
