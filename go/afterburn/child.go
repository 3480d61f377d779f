package afterburn

import (
	"errors"
	"net/http"
	"os"
	"strconv"
	"strings"
)

// Serve answers the AfterBurn protocol on the worker's protocol descriptors, calling
// handler for every request until the watchdog closes the request pipe. A nil handler
// means http.DefaultServeMux.
//
// Call Serve from main once initialisation is complete: its first act is to answer the
// watchdog's handshake, which marks the worker ready (PROTOCOL.md §3.1). Print nothing
// to stdout before it in a worker started under a legacy watchdog (see the package
// documentation).
//
// With one lane (the default) requests come one at a time. When the worker has several
// lanes (§2.5: the watchdog's -lanes, or an offer the worker takes up with
// PreferredLanes under the watchdog's default lanes=auto), Serve calls handler for up
// to one request per lane at once, each from a goroutine of its own, so handler must
// be safe for concurrent use, as for net/http. MaxLanes bounds the number of lanes.
//
// Serve returns nil when every request pipe ends between two requests: the watchdog is
// shutting the worker down and the process should exit 0 (§9.4). It returns an error,
// after closing the response pipes, when the worker must stop: the environment is
// invalid (§2.3, §2.5), a request cannot be parsed (§8.8; it was answered with its
// §8.1 error response), the handshake failed (§3.4), the handler panicked after its
// response had started (§8.3), or the watchdog went away. With lanes such a fault ends
// its own lane only, the others serve on, and Serve returns the error once every lane
// has ended. The process should then exit non-zero, so the usual call is
//
//	if err := afterburn.Serve(h); err != nil {
//		log.Fatal(err)
//	}
func Serve(handler http.Handler, opts ...Option) error {
	if handler == nil {
		handler = http.DefaultServeMux
	}
	o := options{maxLanes: defaultMaxLanes, preferredLanes: defaultPreferredLanes}
	for _, opt := range opts {
		opt(&o)
	}
	if o.maxLanes < 1 {
		return errors.New("afterburn: MaxLanes(" + strconv.Itoa(o.maxLanes) + "): want at least 1")
	}
	if o.preferredLanes < 1 {
		return errors.New("afterburn: PreferredLanes(" + strconv.Itoa(o.preferredLanes) + "): want at least 1")
	}
	lim, err := limitsFromEnv(os.LookupEnv)
	if err != nil {
		return err
	}
	le, err := laneEnvFrom(os.LookupEnv)
	if err != nil {
		return err
	}
	preferred, err := preferredLanesFrom(os.LookupEnv, o.preferredLanes)
	if err != nil {
		return err
	}
	in, out, err := protocolFDs()
	if err != nil {
		return err
	}
	lanes, cancelPipe, err := openLanes(in, out, le, le.lanesInUse(o.maxLanes, preferred))
	if err != nil {
		return err
	}
	handshake := handshakeFields(o.maxLanes, le.preferredAnswer(o.maxLanes, preferred))
	return serveLanes(handler, lanes, cancelPipe, lim, handshake, os.Stderr)
}

// limitsFromEnv reads the limits the watchdog passes (PROTOCOL.md §2.3, §7.3).
// Absent variables give the defaults; a malformed one is an error, not a guess.
func limitsFromEnv(lookup func(string) (string, bool)) (limits, error) {
	lim := defaultLimits
	if v, ok := lookup("AFTERBURN_MAX_HEADER_BYTES"); ok {
		n, ok := parseDigits([]byte(v))
		if !ok || n > 1<<30 {
			return lim, envError("AFTERBURN_MAX_HEADER_BYTES", v, "a number of bytes")
		}
		lim.maxHead = int(n) + headSlack
	}
	if v, ok := lookup("AFTERBURN_MAX_BODY_BYTES"); ok {
		n, ok := parseDigits([]byte(v))
		if !ok {
			return lim, envError("AFTERBURN_MAX_BODY_BYTES", v, "a number of bytes, 0 for unlimited")
		}
		lim.maxBody = n
	}
	return lim, nil
}

// parseFDs parses AFTERBURN_FDS: two decimal descriptors separated by a comma
// (PROTOCOL.md §2.3).
func parseFDs(v string) (in, out int, err error) {
	a, b, found := strings.Cut(v, ",")
	x, okA := parseDigits([]byte(a))
	y, okB := parseDigits([]byte(b))
	if !found || !okA || !okB || x > 1<<30 || y > 1<<30 {
		return 0, 0, envError("AFTERBURN_FDS", v, `two descriptors separated by a comma, like "3,4"`)
	}
	return int(x), int(y), nil
}

func envError(name, value, want string) error {
	return &envErr{"afterburn: bad " + name + " in environment: " + strconv.Quote(value) + " (want " + want + ")"}
}

type envErr struct{ s string }

func (e *envErr) Error() string { return e.s }

// early holds the protocol descriptors when the package's init moved them off fds 0
// and 1 (stdio mode), before any user code could print.
var early struct {
	value   string // the AFTERBURN_FDS it was done for
	opened  bool   // openFDs ran: in and out, or err
	in, out int
	err     error
	taken   bool
}

// init protects stdout and stdin as early as Go allows when the watchdog says the
// protocol is on them (AFTERBURN_FDS naming fd 0 or 1, PROTOCOL.md §2.4): package
// initialisation of afterburn runs before main and before the init of every package
// that imports it, so prints from user init code and from main before Serve land on
// stderr. Without AFTERBURN_FDS nothing happens here: that is either a legacy watchdog
// (Serve then protects, §11.1) or no watchdog at all — a test binary or a tool that
// merely imports the package, whose stdout must stay its stdout.
func init() {
	v, ok := os.LookupEnv("AFTERBURN_FDS")
	if !ok {
		return
	}
	in, out, err := parseFDs(v)
	if err != nil || in > 1 && out > 1 {
		return // Serve reports a bad value; fd mode needs no protection
	}
	early.value, early.opened = v, true
	early.in, early.out, early.err = openFDs(in, out)
}

// protocolFDs returns the request and response pipes (PROTOCOL.md §2.2): the
// descriptors of AFTERBURN_FDS, or fds 0 and 1 without it, moved off stdin and
// stdout when they are those (§2.4). openLanes makes files of them.
func protocolFDs() (in, out int, err error) {
	v, ok := os.LookupEnv("AFTERBURN_FDS")
	inFD, outFD := 0, 1
	if ok {
		if inFD, outFD, err = parseFDs(v); err != nil {
			return -1, -1, err
		}
	}
	if ok && early.value == v && early.opened {
		if early.taken {
			return -1, -1, &envErr{"afterburn: Serve called again after it closed the protocol descriptors"}
		}
		early.taken = true
		return early.in, early.out, early.err
	}
	return openFDs(inFD, outFD)
}
