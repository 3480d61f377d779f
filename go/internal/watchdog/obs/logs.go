package obs

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// MaxLogLine is the longest worker log line forwarded in one piece;
// PROTOCOL.md §9.5: longer lines are split.
const MaxLogLine = 64 << 10

// Logger serialises every line the watchdog writes to its stderr, so that
// lines of different workers and the access log never interleave.
//
// Access-log and worker lines are queued and written by a goroutine of the
// logger's own, many lines per write: a request's response does not wait for
// its log line, and the goroutine lets lines gather for logLinger after the
// first one, so a busy watchdog makes one write(2) where it would make
// hundreds, even when requests come one at a time. The watchdog's own lines (printf) are written at once,
// after everything queued before them. A queue that the output does not
// drain (a stalled stderr) is written synchronously once it passes
// maxLogBacklog, so it pushes back instead of growing.
type Logger struct {
	mu      sync.Mutex // guards pending
	pending []byte     // complete lines, not yet written
	writeMu sync.Mutex // held while writing, so batches go out in order
	spare   []byte     // the last batch's buffer, reused; guarded by writeMu
	out     io.Writer
	stamps  bool // prefix_logs: timestamp worker lines
	Json    bool // log_format=json: one JSON object per line (logs_json.go); set before the first line
	wake    chan struct{}
}

// maxLogBacklog is the most queued log bytes before queuing writes itself.
const maxLogBacklog = 1 << 20

// logLinger is how long a queued line may wait for others to share its
// write. At 5,000 requests a second one at a time, 200 writes instead of
// 5,000 (each a syscall and a goroutine wake-up on the request path's CPU),
// while a line is never later than a human or a log collector notices.
const logLinger = 5 * time.Millisecond

func NewLogger(out io.Writer, stamps bool) *Logger {
	l := &Logger{out: out, stamps: stamps, wake: make(chan struct{}, 1)}
	go func() {
		for range l.wake {
			time.Sleep(logLinger)
			l.Flush()
		}
	}()
	return l
}

// queue ends a line appended to l.pending (l.mu held, and released here) and
// has it written soon.
func (l *Logger) queue() {
	backlog := len(l.pending)
	l.mu.Unlock()
	if backlog > maxLogBacklog {
		l.Flush()
		return
	}
	select {
	case l.wake <- struct{}{}:
	default: // a flush is already due
	}
}

// Flush writes every queued line in one write.
func (l *Logger) Flush() {
	l.writeMu.Lock()
	defer l.writeMu.Unlock()
	l.mu.Lock()
	batch := l.pending
	l.pending = l.spare[:0]
	l.mu.Unlock()
	if len(batch) > 0 {
		l.out.Write(batch)
	}
	l.spare = batch
}

// appendStamp appends the log timestamp, UTC with milliseconds:
// 2006-01-02T15:04:05.000Z. Written out by hand: it is on every access-log
// line, and time.AppendFormat, which interprets its layout each time, cost
// ~1,900 instructions a call, where this costs ~500.
func appendStamp(b []byte, t time.Time) []byte {
	t = t.UTC()
	// The date and time to the second change once a second; every access
	// line of that second reuses them (Date and Clock cost ~400
	// instructions a line).
	sec := t.Unix()
	if c := lastStamp.Load(); c != nil && c.sec == sec {
		b = append(b, c.text[:]...)
	} else {
		n := len(b)
		b = appendClock(b, t)
		c := &stampCache{sec: sec}
		copy(c.text[:], b[n:])
		lastStamp.Store(c)
	}
	b = append(b, '.')
	b = appendPadded(b, t.Nanosecond()/int(time.Millisecond), 3)
	return append(b, 'Z')
}

// stampCache is the seconds part of a stamp ("2006-01-02T15:04:05") and
// the second it stands for.
type stampCache struct {
	sec  int64
	text [19]byte
}

var lastStamp atomic.Pointer[stampCache]

// appendClock appends t (UTC) to the second: 2006-01-02T15:04:05.
func appendClock(b []byte, t time.Time) []byte {
	year, month, day := t.Date()
	hour, minute, sec := t.Clock()
	b = appendPadded(b, year, 4)
	b = append(b, '-')
	b = appendPadded(b, int(month), 2)
	b = append(b, '-')
	b = appendPadded(b, day, 2)
	b = append(b, 'T')
	b = appendPadded(b, hour, 2)
	b = append(b, ':')
	b = appendPadded(b, minute, 2)
	b = append(b, ':')
	return appendPadded(b, sec, 2)
}

// appendPadded appends n, at least width digits, zero-padded (n >= 0).
func appendPadded(b []byte, n, width int) []byte {
	var d [20]byte
	i := len(d)
	for n >= 10 || width > 1 {
		i--
		d[i] = byte('0' + n%10)
		n /= 10
		width--
	}
	i--
	d[i] = byte('0' + n)
	return append(b, d[i:]...)
}

// Levels of the watchdog's own lines, the "level" of a JSON line (PROTOCOL.md
// §9.5); text lines do not show them.
const (
	levelInfo  = "info"    // the watchdog's ordinary course, a client's fault
	levelWarn  = "warning" // a worker failed, was replaced or killed, or a request was cut
	levelError = "error"   // the watchdog cannot do what its settings ask
)

// Printf writes one line of the watchdog's own at level info:
// "afterburn-watchdog: ...".
func (l *Logger) Printf(format string, args ...any) { l.logf(levelInfo, format, args...) }

// Warnf is printf at level warning.
func (l *Logger) Warnf(format string, args ...any) { l.logf(levelWarn, format, args...) }

// Errorf is printf at level error.
func (l *Logger) Errorf(format string, args ...any) { l.logf(levelError, format, args...) }

func (l *Logger) logf(level, format string, args ...any) {
	if l.Json {
		msg := fmt.Appendf(nil, format, args...)
		l.mu.Lock()
		l.pending = appendOwnJSON(l.pending, level, msg)
		l.mu.Unlock()
		l.Flush()
		return
	}
	l.mu.Lock()
	l.pending = append(l.pending, "afterburn-watchdog: "...)
	l.pending = fmt.Appendf(l.pending, format, args...)
	l.pending = append(l.pending, '\n')
	l.mu.Unlock()
	l.Flush()
}

// WorkerLine writes one line of output of worker id (process pid) tagged with
// the worker id, PROTOCOL.md §9.5: "2026-11-22T10:00:00.000Z w2 stdout: text".
func (l *Logger) WorkerLine(id, pid int, stream string, line []byte) {
	l.mu.Lock()
	if l.Json {
		l.pending = AppendWorkerJSON(l.pending, id, pid, stream, line)
		l.queue()
		return
	}
	b := l.pending
	if l.stamps {
		b = appendStamp(b, time.Now())
		b = append(b, ' ')
	}
	b = append(b, 'w')
	b = strconv.AppendInt(b, int64(id), 10)
	b = append(b, ' ')
	b = append(b, stream...)
	b = append(b, ": "...)
	b = append(b, line...)
	b = append(b, '\n')
	l.pending = b
	l.queue()
}

// AccessEntry is what PROTOCOL.md §9.5 asks of an access-log line.
type AccessEntry struct {
	Start     time.Time
	RequestID string
	Method    string
	Path      string
	Status    int
	Bytes     int64
	Worker    int // 0 when no worker was used
}

// Access writes the access-log line of one request that took d (PROTOCOL.md
// §9.5).
func (l *Logger) Access(e *AccessEntry, d time.Duration) {
	l.mu.Lock()
	if l.Json {
		l.pending = AppendAccessJSON(l.pending, e, d)
		l.queue()
		return
	}
	b := append(l.pending, "afterburn-watchdog: access time="...)
	b = appendStamp(b, e.Start)
	b = append(b, " id="...)
	b = append(b, e.RequestID...)
	b = append(b, " method="...)
	b = append(b, e.Method...)
	b = append(b, " path="...)
	b = append(b, e.Path...)
	b = append(b, " status="...)
	b = strconv.AppendInt(b, int64(e.Status), 10)
	b = append(b, " bytes="...)
	b = strconv.AppendInt(b, e.Bytes, 10)
	b = append(b, " duration="...)
	b = appendSeconds(b, d)
	b = append(b, "s worker="...)
	if e.Worker > 0 {
		b = append(b, 'w')
		b = strconv.AppendInt(b, int64(e.Worker), 10)
	} else {
		b = append(b, '-')
	}
	b = append(b, '\n')
	l.pending = b
	l.queue()
}

// appendSeconds appends d in seconds with six decimals, as
// strconv.AppendFloat(b, d.Seconds(), 'f', 6, 64) would, in integers.
func appendSeconds(b []byte, d time.Duration) []byte { return appendMicros(b, d, 6) }

// appendMillis appends d in milliseconds with three decimals (microseconds).
func appendMillis(b []byte, d time.Duration) []byte { return appendMicros(b, d, 3) }

// microsPer is the microseconds in the unit of appendMicros's decimals.
var microsPer = [...]int64{1, 10, 100, 1000, 10000, 100000, 1000000}

// appendMicros appends d, rounded to the microsecond, in the unit that has
// decimals digits of microseconds: 6 for seconds, 3 for milliseconds.
func appendMicros(b []byte, d time.Duration, decimals int) []byte {
	us := int64((d + 500*time.Nanosecond) / time.Microsecond)
	if us < 0 {
		b = append(b, '-')
		us = -us
	}
	unit := microsPer[decimals]
	b = strconv.AppendInt(b, us/unit, 10)
	b = append(b, '.')
	return appendPadded(b, int(us%unit), decimals)
}

// ForwardLines copies a worker's log pipe to the logger line by line until
// EOF. PROTOCOL.md §9.5: the watchdog never interprets these bytes, beyond
// merging a line that is a JSON object in json mode (logs_json.go).
func (l *Logger) ForwardLines(id, pid int, stream string, r io.Reader) {
	br := bufio.NewReaderSize(r, MaxLogLine)
	for {
		line, err := br.ReadSlice('\n')
		switch err {
		case nil:
			line = line[:len(line)-1]
			if n := len(line); n > 0 && line[n-1] == '\r' {
				line = line[:n-1]
			}
			l.WorkerLine(id, pid, stream, line)
		case bufio.ErrBufferFull:
			l.WorkerLine(id, pid, stream, line) // split a line over 64 KiB
		default:
			if len(line) > 0 {
				l.WorkerLine(id, pid, stream, line)
			}
			return
		}
	}
}
