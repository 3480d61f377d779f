package config

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"runtime"
	"strconv"
	"strings"
	"time"
)

// Config holds the settings of PROTOCOL.md §10.2. Build one with
// ParseConfig; the zero value is not usable.
type Config struct {
	Port                int           // port: TCP port, 0 = ephemeral
	ListenHost          string        // listen_host: address to bind, "" = all interfaces
	Fprocess            string        // fprocess: worker command run with /bin/sh -c
	Command             []string      // the worker argv: what follows "--", else sh -c fprocess
	Workers             int           // workers: pool size (§2.1)
	ExecTimeout         time.Duration // exec_timeout: deadline per request, 0 = none (§5.2)
	ReadTimeout         time.Duration // read_timeout: reading a request from the client
	WriteTimeout        time.Duration // write_timeout: writing the response, beyond exec_timeout
	NetHTTPOnly         bool          // front=off: every client request through net/http, none through the front (§10.6)
	MaxInflight         int           // max_inflight: busy plus queued requests, 0 = unlimited (§10.3)
	InitTimeout         time.Duration // init_timeout: worker start to handshake reply (§3.5)
	HealthcheckInterval time.Duration // healthcheck_interval: liveness handshake on idle workers, 0 = off
	ShutdownTimeout     time.Duration // shutdown_timeout: grace period on SIGTERM (§9.4)
	MaxRequestBody      int64         // max_request_body: §7.2, 0 = unlimited
	MaxHeaderBytes      int           // max_header_bytes: §7.1
	PrefixLogs          bool          // prefix_logs: timestamp worker log lines (§9.5)
	LogFormat           string        // log_format: LogText or LogJSON, "" = text (§9.5)
	Stdio               bool          // stdio: protocol on the worker's stdin/stdout (§2.2)
	Handshake           bool          // handshake: send the handshake (§3, §11.2)
	MetricsPort         int           // metrics_port: the /metrics listener's port, 0 = ephemeral, MetricsOnPort = on port (§10.1)
	MaxRequests         int           // max_requests: recycle a worker after about this many requests, 0 = never (§9.7)
	MaxAge              time.Duration // max_age: recycle a worker after about this long, 0 = never (§9.7)
	MaxWorkerRSS        int64         // max_worker_rss: recycle a worker past this resident size, 0 = no limit (§9.7)
	TrustRequestID      bool          // trust_request_id: a client's valid X-Request-Id becomes the request id (§5.6)
	Spawn               string        // spawn: how workers come to exist, SpawnExec or SpawnFork (§2.6)
	ForkTimeout         time.Duration // fork_timeout: fork request to the forked worker's handshake reply (§2.6)
	Lanes               int           // lanes: exchanges in flight per worker, capped by its library, or LanesAuto (§2.5)
	CancelGrace         time.Duration // cancel_grace: after a deadline, how long a worker may take to clean up before it is killed (§8.6)
	Isolation           string        // isolation: IsolationNone, or IsolationRequest: one fresh fork per request (§2.7)
	IsolationGrace      time.Duration // isolation_grace: how long a worker has to exit after its one exchange (§2.7)

	// Buffering between clients and workers: request bodies (PROTOCOL.md §6.6,
	// reqbuffer.go) and responses (§6.1, respbuffer.go).
	RequestBuffering     bool   // request_buffering: read Content-Length bodies whole before taking a worker (§6.6)
	RequestBufferMemory  int64  // request_buffer_memory: bytes of a buffered request body held in memory (§6.6)
	ResponseBuffering    bool   // response_buffering: read responses ahead of slow clients (§6.1)
	ResponseBufferMemory int64  // response_buffer_memory: bytes of one response held in memory (§6.1)
	BufferDir            string // buffer_dir: directory of the temporary files, "" = os.TempDir()
	BufferSpillMax       int64  // buffer_spill_max: bytes in temporary files, requests and responses together

	// Log receives the watchdog's own lines, worker output and the access
	// log (§9.5). New uses os.Stderr when it is nil.
	Log io.Writer

	// Env is extra environment for workers; tests use it to steer the
	// child they run.
	Env []string
}

// The values of spawn (PROTOCOL.md §10.2): run the command for every worker,
// or fork every worker from one template (§2.6).
const (
	SpawnExec = "exec"
	SpawnFork = "fork"
)

// The values of isolation (PROTOCOL.md §10.2): workers serve many requests,
// or each request gets a fresh fork of the template that exits after it (§2.7).
const (
	IsolationNone    = "none"
	IsolationRequest = "request"
)

// maxLanes bounds lanes: each lane is two pipes and two descriptors in the
// worker, and 256 workers' worth of pipes is far past what one process
// carries usefully (§2.5).
const maxLanes = 256

// LanesAuto is lanes=auto, the default (PROTOCOL.md §2.5, §10.2): each
// worker is offered AutoLanes lanes and serves as many as its library
// prefers, one when it states no preference.
const LanesAuto = -1

// AutoLanes is K under lanes=auto until a worker has answered its offer:
// twice what the Node library prefers (node/README.md, "Lanes"), so that a
// library may prefer more, and few enough that the offer's idle pipes, in
// the workers that start before the first answer, cost little (§2.5).
const AutoLanes = 16

// OffersLanes reports whether workers are offered lanes under lanes=auto:
// only where lanes can be given at all (fd mode, the handshake, spawn=exec).
// Elsewhere auto is one lane, quietly (§2.5).
func (c *Config) OffersLanes() bool {
	return c.Lanes == LanesAuto && !c.Stdio && c.Handshake && c.Spawn != SpawnFork
}

// lanesValue is the lanes flag: auto (LanesAuto) or a number.
type lanesValue int

func (v *lanesValue) String() string {
	if v == nil || int(*v) == LanesAuto {
		return "auto"
	}
	return strconv.Itoa(int(*v))
}

func (v *lanesValue) Set(s string) error {
	if s == "auto" {
		*v = LanesAuto
		return nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 {
		return fmt.Errorf("bad lanes %q: want auto or a number of lanes from 1", s)
	}
	*v = lanesValue(n)
	return nil
}

// MetricsOnPort is the metrics_port that serves /metrics on port instead of
// on a listener of its own (PROTOCOL.md §10.1).
const MetricsOnPort = -1

// usageHeader is printed above the flag list by --help.
const usageHeader = `usage: afterburn-watchdog [flags] -- CMD ARGS...

Runs CMD ARGS (or $fprocess with /bin/sh -c) as a pool of AfterBurn/1 workers
and serves HTTP on port. Every flag is also read from the environment variable
of the same name; a flag wins. Durations accept Go syntax (1m30s) or plain
seconds (90).

flags:
`

// ParseConfig reads the settings of PROTOCOL.md §10.2 from args (without the
// program name) and the environment getenv. A flag wins over an environment
// variable; port falls back to Knative's PORT, then 8080. It returns
// flag.ErrHelp after writing the usage to usage when args ask for help.
func ParseConfig(args []string, getenv func(string) string, usage io.Writer) (Config, error) {
	cfg := Config{
		Port:            8080,
		MetricsPort:     8081, // as OpenFaaS of-watchdog
		ExecTimeout:     10 * time.Second,
		ReadTimeout:     10 * time.Second,
		WriteTimeout:    10 * time.Second,
		InitTimeout:     60 * time.Second,
		ShutdownTimeout: 15 * time.Second,
		MaxRequestBody:  64 << 20,
		MaxHeaderBytes:  32768,
		PrefixLogs:      true,
		LogFormat:       LogText,
		Handshake:       true,
		TrustRequestID:  true,
		Spawn:           SpawnExec,
		ForkTimeout:     10 * time.Second,
		Lanes:           LanesAuto,
		CancelGrace:     time.Second,
		Isolation:       IsolationNone,
		IsolationGrace:  500 * time.Millisecond,

		RequestBuffering:     true,
		RequestBufferMemory:  DefaultRequestBufferMemory,
		ResponseBuffering:    true,
		ResponseBufferMemory: 1 << 20,
		BufferSpillMax:       1 << 30,
	}
	fs := settingFlags(&cfg, usage)

	// PROTOCOL.md §10.2: the environment first, so that flags parsed after it win.
	var envErr error
	fs.VisitAll(func(f *flag.Flag) {
		v := getenv(f.Name)
		if v == "" && f.Name == "port" {
			v = getenv("PORT") // Knative
		}
		if v == "" || envErr != nil {
			return
		}
		if err := fs.Set(f.Name, v); err != nil {
			envErr = fmt.Errorf("watchdog: bad environment variable %s=%q: %v", f.Name, v, err)
		}
	})
	if envErr != nil {
		return Config{}, envErr
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return Config{}, err
		}
		return Config{}, fmt.Errorf("watchdog: %v", err)
	}
	if cfg.Workers == 0 {
		cfg.Workers = runtime.NumCPU()
	}
	cfg.Command = fs.Args()
	if len(cfg.Command) == 0 && cfg.Fprocess != "" {
		cfg.Command = []string{"/bin/sh", "-c", cfg.Fprocess}
	}
	if err := cfg.Check(); err != nil {
		return Config{}, err
	}
	return cfg, nil
}

// settingFlags defines the flags of PROTOCOL.md §10.2 on cfg, whose fields
// hold the defaults; usage gets the flag package's messages.
func settingFlags(cfg *Config, usage io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("afterburn-watchdog", flag.ContinueOnError)
	if usage == nil {
		usage = io.Discard
	}
	fs.SetOutput(usage)
	fs.Usage = func() {
		fmt.Fprint(usage, usageHeader)
		fs.PrintDefaults()
	}
	fs.IntVar(&cfg.Port, "port", cfg.Port, "TCP `port` to serve on; 0 picks a free one (env port, then PORT)")
	fs.StringVar(&cfg.ListenHost, "listen_host", "", "`address` to bind (default all interfaces)")
	fs.StringVar(&cfg.Fprocess, "fprocess", "", "`command` for the workers, run with /bin/sh -c, when none follows --")
	fs.IntVar(&cfg.Workers, "workers", 0, "`number` of worker processes; 0 = the number of CPUs")
	fs.Var((*seconds)(&cfg.ExecTimeout), "exec_timeout", "`duration` of a request's deadline, to the end of its response; 0 = none")
	fs.Var((*frontValue)(&cfg.NetHTTPOnly), "front", "`mode`: on, the default, or off, which serves every client request through net/http, none through the watchdog's own front for plain HTTP/1.1 requests (§10.6)")
	fs.Var((*seconds)(&cfg.ReadTimeout), "read_timeout", "`duration` allowed to read a request's head and body from the client")
	fs.Var((*seconds)(&cfg.WriteTimeout), "write_timeout", "`duration` allowed to write a response to the client, beyond exec_timeout")
	fs.IntVar(&cfg.MaxInflight, "max_inflight", 0, "most `requests` held at once, queued ones included; more get 429; 0 = unlimited")
	fs.Var((*seconds)(&cfg.InitTimeout), "init_timeout", "`duration` allowed from starting a worker to its handshake reply")
	fs.Var((*seconds)(&cfg.HealthcheckInterval), "healthcheck_interval", "`interval` between liveness handshakes on idle workers; 0 = off")
	fs.Var((*seconds)(&cfg.ShutdownTimeout), "shutdown_timeout", "`duration` of the grace period for requests and workers on SIGTERM")
	fs.Int64Var(&cfg.MaxRequestBody, "max_request_body", cfg.MaxRequestBody, "request body limit in `bytes`, after de-chunking; 0 = unlimited")
	fs.IntVar(&cfg.MaxHeaderBytes, "max_header_bytes", cfg.MaxHeaderBytes, "request head limit in `bytes` (request line and field lines)")
	fs.BoolVar(&cfg.PrefixLogs, "prefix_logs", cfg.PrefixLogs, "timestamp worker log lines")
	fs.StringVar(&cfg.LogFormat, "log_format", cfg.LogFormat, "`format` of every line the watchdog writes, worker output included: text, or json (one object per line); workers get it as AFTERBURN_LOG_FORMAT")
	fs.BoolVar(&cfg.Stdio, "stdio", false, "use the worker's stdin and stdout as the protocol pipes")
	fs.BoolVar(&cfg.Handshake, "handshake", cfg.Handshake, "send the readiness handshake; false only for children without a library")
	fs.IntVar(&cfg.MetricsPort, "metrics_port", cfg.MetricsPort, "serve /metrics on this `port`; 0 picks a free one; -1 serves it on port instead, hiding the function's own /metrics")
	fs.IntVar(&cfg.MaxRequests, "max_requests", 0, "recycle a worker after this many `requests`, plus up to 10% jitter; 0 = never")
	fs.Var((*seconds)(&cfg.MaxAge), "max_age", "recycle a worker after this `duration`, plus up to 10% jitter; 0 = never")
	fs.Int64Var(&cfg.MaxWorkerRSS, "max_worker_rss", 0, "recycle a worker whose resident memory passes this many `bytes`; 0 = no limit")
	fs.BoolVar(&cfg.TrustRequestID, "trust_request_id", cfg.TrustRequestID, "use a client's valid X-Request-Id as the request id; false = always a fresh one")
	fs.StringVar(&cfg.Spawn, "spawn", cfg.Spawn, "`mode` in which workers come to exist: exec runs the command for each; fork forks them from one template process that initialised once (§2.6: needs fd mode and a library that can fork)")
	fs.Var((*seconds)(&cfg.ForkTimeout), "fork_timeout", "`duration` allowed from a fork request to the forked worker's handshake reply")
	fs.Var((*lanesValue)(&cfg.Lanes), "lanes", "`number` of exchanges each worker carries at once, on separate pipes, capped by what its library states (§2.5: needs fd mode, spawn=exec and a library that lists streams); auto: as many as the library prefers, one for a library that states no preference, and one where lanes cannot be offered (stdio, spawn=fork)")
	fs.Var((*seconds)(&cfg.CancelGrace), "cancel_grace", "`duration` a worker gets, after a request's deadline, to cancel its handler and end the late response before it is killed (§8.6)")
	fs.StringVar(&cfg.Isolation, "isolation", cfg.Isolation, "`mode`: none, or request: every request is served by a fresh fork of the template, which exits after its response (§2.7: needs spawn=fork and a library that can fork)")
	fs.Var((*seconds)(&cfg.IsolationGrace), "isolation_grace", "`duration` a worker has to exit after its one exchange under isolation=request before its process group is killed")
	fs.BoolVar(&cfg.RequestBuffering, "request_buffering", cfg.RequestBuffering, "read a request body of known length whole before it takes a worker; false = stream it")
	fs.Int64Var(&cfg.RequestBufferMemory, "request_buffer_memory", cfg.RequestBufferMemory, "`bytes` of a buffered request body held in memory; the rest goes to a temporary file")
	fs.BoolVar(&cfg.ResponseBuffering, "response_buffering", cfg.ResponseBuffering, "read each response from its worker as fast as it is written, so that a slow client does not hold the worker")
	fs.Int64Var(&cfg.ResponseBufferMemory, "response_buffer_memory", cfg.ResponseBufferMemory, "`bytes` of one response held in memory ahead of its client; the rest goes to a temporary file")
	fs.StringVar(&cfg.BufferDir, "buffer_dir", "", "`directory` of the temporary files of buffered request bodies and responses (default $TMPDIR, else /tmp)")
	fs.Int64Var(&cfg.BufferSpillMax, "buffer_spill_max", cfg.BufferSpillMax, "`bytes` held in temporary files, all requests and responses together; 0 = memory only")
	return fs
}

// RequestedLogFormat is the log_format that args (without the program name)
// and the environment ask for, json or text, read without parsing the other
// settings: so that a setting which does not parse is reported in the format
// asked for (PROTOCOL.md §9.5: with json every line is one object). Like
// ParseConfig, a flag wins over the environment and flags end at "--" or the
// first argument that is not one.
func RequestedLogFormat(args []string, getenv func(string) string) string {
	v := getenv("log_format")
	fs := settingFlags(&Config{}, io.Discard)
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" || len(a) < 2 || a[0] != '-' {
			break
		}
		name, value, hasValue := strings.Cut(strings.TrimPrefix(a[1:], "-"), "=")
		f := fs.Lookup(name)
		if f == nil {
			continue // not a setting: ParseConfig says so
		}
		if b, ok := f.Value.(interface{ IsBoolFlag() bool }); !hasValue && !(ok && b.IsBoolFlag()) && i+1 < len(args) {
			i++ // a setting's value, whatever it looks like
			value = args[i]
		}
		if name == "log_format" {
			v = value
		}
	}
	if v == LogJSON {
		return LogJSON
	}
	return LogText
}

// Check rejects settings out of range.
func (c *Config) Check() error {
	switch {
	case len(c.Command) == 0:
		return errors.New("watchdog: no worker command: give one after -- or set fprocess")
	case c.Port < 0 || c.Port > 65535:
		return fmt.Errorf("watchdog: bad port %d", c.Port)
	case c.MetricsPort < MetricsOnPort || c.MetricsPort > 65535:
		return fmt.Errorf("watchdog: bad metrics_port %d: want a port, 0 for a free one or -1 for /metrics on port", c.MetricsPort)
	case c.MetricsPort == c.Port && c.Port != 0:
		return fmt.Errorf("watchdog: metrics_port %d is port too: set metrics_port to -1 to serve /metrics on port", c.MetricsPort)
	case c.Workers < 1:
		return fmt.Errorf("watchdog: bad workers %d: need at least 1", c.Workers)
	case c.MaxInflight < 0:
		return fmt.Errorf("watchdog: bad max_inflight %d", c.MaxInflight)
	case c.MaxRequests < 0:
		return fmt.Errorf("watchdog: bad max_requests %d", c.MaxRequests)
	case c.MaxWorkerRSS < 0:
		return fmt.Errorf("watchdog: bad max_worker_rss %d", c.MaxWorkerRSS)
	case c.MaxRequestBody < 0:
		return fmt.Errorf("watchdog: bad max_request_body %d", c.MaxRequestBody)
	case c.MaxHeaderBytes < 1:
		return fmt.Errorf("watchdog: bad max_header_bytes %d", c.MaxHeaderBytes)
	case c.RequestBufferMemory < 1:
		return fmt.Errorf("watchdog: bad request_buffer_memory %d: need at least 1", c.RequestBufferMemory)
	case c.ResponseBufferMemory < 0:
		return fmt.Errorf("watchdog: bad response_buffer_memory %d", c.ResponseBufferMemory)
	case c.BufferSpillMax < 0:
		return fmt.Errorf("watchdog: bad buffer_spill_max %d", c.BufferSpillMax)
	case c.LogFormat != LogText && c.LogFormat != LogJSON && c.LogFormat != "":
		return fmt.Errorf("watchdog: bad log_format %q: want text or json", c.LogFormat)
	case c.Spawn != SpawnExec && c.Spawn != SpawnFork && c.Spawn != "":
		return fmt.Errorf("watchdog: bad spawn %q: want exec or fork", c.Spawn)
	case c.Spawn == SpawnFork && c.Stdio:
		return errors.New("watchdog: spawn=fork needs fd mode: a template hands its workers the descriptors of §2.2, which stdio=true does not use; set stdio=false or spawn=exec")
	case c.Spawn == SpawnFork && runtime.GOOS != "linux":
		return errors.New("watchdog: spawn=fork needs Linux (PR_SET_CHILD_SUBREAPER)")
	case c.Spawn == SpawnFork && c.ForkTimeout <= 0:
		return fmt.Errorf("watchdog: bad fork_timeout %v: must be positive", c.ForkTimeout)
	case (c.Lanes < 1 && c.Lanes != LanesAuto) || c.Lanes > maxLanes:
		return fmt.Errorf("watchdog: bad lanes %d: want auto or 1 to %d", c.Lanes, maxLanes)
	case c.Lanes > 1 && c.Stdio:
		return errors.New("watchdog: lanes > 1 needs fd mode: each lane is a pair of pipes of its own (§2.5); set stdio=false or lanes=1")
	case c.Lanes > 1 && !c.Handshake:
		return errors.New("watchdog: lanes > 1 needs the handshake: it is where the library states how many lanes it serves (§2.5)")
	case c.Lanes > 1 && c.Spawn == SpawnFork:
		return errors.New("watchdog: lanes > 1 with spawn=fork is not supported in this version: a fork request carries one lane's descriptors (§2.5, §2.6); use one of them")
	case c.CancelGrace <= 0:
		return fmt.Errorf("watchdog: bad cancel_grace %v: must be positive", c.CancelGrace)
	case c.Isolation != IsolationNone && c.Isolation != IsolationRequest && c.Isolation != "":
		return fmt.Errorf("watchdog: bad isolation %q: want none or request", c.Isolation)
	case c.Isolation == IsolationRequest && c.Spawn != SpawnFork:
		return errors.New("watchdog: isolation=request needs spawn=fork: every request is served by a fresh fork of the template (§2.7); set spawn=fork")
	case c.Isolation == IsolationRequest && c.IsolationGrace <= 0:
		return fmt.Errorf("watchdog: bad isolation_grace %v: must be positive", c.IsolationGrace)
	case c.Isolation == IsolationRequest && (c.MaxRequests > 0 || c.MaxAge > 0 || c.MaxWorkerRSS > 0):
		return errors.New("watchdog: max_requests, max_age and max_worker_rss have no use with isolation=request: every worker serves one request and exits (§2.7); unset them")
	case c.InitTimeout <= 0:
		return fmt.Errorf("watchdog: bad init_timeout %v: must be positive", c.InitTimeout)
	}
	return nil
}

// frontValue is the front flag, on or off, stored as its negation so that
// the zero Config has the front on.
type frontValue bool

func (v *frontValue) String() string {
	if v != nil && bool(*v) {
		return "off"
	}
	return "on"
}

func (v *frontValue) Set(s string) error {
	switch s {
	case "on", "true":
		*v = false
	case "off", "false":
		*v = true
	default:
		return errors.New("front must be on or off")
	}
	return nil
}

// seconds is a duration flag: Go syntax ("1m30s") or plain seconds ("90",
// "0.5"), PROTOCOL.md §10.2.
type seconds time.Duration

func (s *seconds) String() string { return time.Duration(*s).String() }

func (s *seconds) Set(v string) error {
	d, err := parseDuration(v)
	if err != nil {
		return err
	}
	*s = seconds(d)
	return nil
}

// parseDuration accepts Go duration syntax or a plain number of seconds.
func parseDuration(v string) (time.Duration, error) {
	v = strings.TrimSpace(v)
	var d time.Duration
	if f, err := strconv.ParseFloat(v, 64); err == nil {
		if f > float64(1<<63-1)/float64(time.Second) {
			return 0, fmt.Errorf("duration out of range: %q", v)
		}
		d = time.Duration(f * float64(time.Second))
	} else if d, err = time.ParseDuration(v); err != nil {
		return 0, fmt.Errorf("bad duration %q: want Go syntax (1m30s) or seconds (90)", v)
	}
	if d < 0 {
		return 0, fmt.Errorf("negative duration %q", v)
	}
	return d, nil
}

// logFormat is log_format, text when unset (a Config built by hand).
func (c *Config) LogFormatOrText() string {
	if c.LogFormat == "" {
		return LogText
	}
	return c.LogFormat
}

// DefaultRequestBufferMemory is request_buffer_memory's default.
const DefaultRequestBufferMemory = 256 << 10

// Log formats, the values of log_format.
const (
	LogText = "text"
	LogJSON = "json"
)
