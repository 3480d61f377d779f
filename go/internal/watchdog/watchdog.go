package watchdog

import (
	"bytes"
	"context"
	"errors"
	"log"
	"net"
	"net/http"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/afterburn-dev/afterburn/go/internal/watchdog/buffer"
	"github.com/afterburn-dev/afterburn/go/internal/watchdog/config"
	"github.com/afterburn-dev/afterburn/go/internal/watchdog/exchange"
	"github.com/afterburn-dev/afterburn/go/internal/watchdog/front"
	"github.com/afterburn-dev/afterburn/go/internal/watchdog/guard"
	"github.com/afterburn-dev/afterburn/go/internal/watchdog/obs"
	"github.com/afterburn-dev/afterburn/go/internal/watchdog/pool"
	"github.com/afterburn-dev/afterburn/go/internal/watchdog/proc"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Watchdog is an AfterBurn/1 watchdog: an http.Handler in front of a pool of
// workers. Create one with New.
type Watchdog struct {
	cfg            config.Config
	log            *obs.Logger
	pool           *pool.Pool
	buffers        *buffer.RespBuffers // PROTOCOL.md §6.1 (respbuffer.go)
	m              *obs.Metrics
	guard          *guard.Guard // PROTOCOL.md §10.5
	metricsHandler http.Handler
	xenv           *exchange.Env // what every exchange shares
	stopping       atomic.Bool
	startOnce      sync.Once
	spill          buffer.SpillBudget     // buffer_spill_max (§6.6)
	requests       *buffer.RequestBuffers // PROTOCOL.md §6.6
}

// New checks cfg and returns a Watchdog whose workers are not started yet.
func New(cfg config.Config) (*Watchdog, error) {
	if cfg.Lanes == 0 {
		cfg.Lanes = 1 // a Config built by hand: one lane, as before §2.5
	}
	if err := cfg.Check(); err != nil {
		return nil, err
	}
	out := cfg.Log
	if out == nil {
		out = os.Stderr
	}
	wd := &Watchdog{cfg: cfg, log: obs.NewLogger(out, cfg.PrefixLogs)}
	wd.log.Json = cfg.LogFormatOrText() == config.LogJSON
	wd.spill.Max = cfg.BufferSpillMax
	wd.pool = pool.New(&wd.cfg, wd.log)
	wd.buffers = buffer.NewRespBuffers(&wd.cfg, &wd.spill, wd.log)
	wd.m = obs.NewMetrics(wd.pool, wd.buffers)
	wd.requests = &buffer.RequestBuffers{Cfg: &wd.cfg, Spill: &wd.spill, M: wd.m, Log: wd.log}
	wd.pool.SetMetrics(wd.m)
	wd.guard = guard.New(cfg.MaxHeaderBytes, cfg.ReadTimeout, wd.log)
	wd.metricsHandler = promhttp.HandlerFor(wd.m.Reg, promhttp.HandlerOpts{})
	wd.xenv = &exchange.Env{Cfg: &wd.cfg, Log: wd.log, M: wd.m, Pool: wd.pool, Buffers: wd.buffers,
		Fail: wd.fail, WriteTimeout: wd.writeTimeout(), Stopping: &wd.stopping}
	return wd, nil
}

// Start starts the workers. Requests that arrive before one is ready wait
// in the queue.
func (wd *Watchdog) Start() {
	wd.startOnce.Do(func() {
		// PROTOCOL.md §2.2: workers get the protocol's descriptors, no others.
		if err := proc.MarkInheritedCloseOnExec(); err != nil {
			wd.log.Warnf("could not mark inherited descriptors close-on-exec: %v; workers may inherit them", err)
		}
		wd.buffers.CheckDir()
		wd.pool.Start()
	})
}

// Run listens on port (and metrics_port), starts the workers and serves
// until ctx ends, then shuts down gracefully (PROTOCOL.md §9.4) and returns
// nil.
func (wd *Watchdog) Run(ctx context.Context) error {
	defer wd.log.Flush() // lines still lingering in the queue (logs.go)
	ln, err := net.Listen("tcp", net.JoinHostPort(wd.cfg.ListenHost, strconv.Itoa(wd.cfg.Port)))
	if err != nil {
		return errors.New("watchdog: " + err.Error())
	}
	var mln net.Listener
	if wd.cfg.MetricsPort != config.MetricsOnPort {
		if mln, err = net.Listen("tcp", net.JoinHostPort(wd.cfg.ListenHost, strconv.Itoa(wd.cfg.MetricsPort))); err != nil {
			ln.Close()
			return errors.New("watchdog: " + err.Error())
		}
	}
	return wd.serve(ctx, ln, mln)
}

// serve is Run on listeners already open; mln is nil when /metrics is
// served on port (MetricsOnPort).
func (wd *Watchdog) serve(ctx context.Context, ln, mln net.Listener) error {
	if os.Getpid() == 1 {
		proc.StartReaper()
	}
	wd.Start()
	srv := wd.newServer(wd)
	// PROTOCOL.md §10.5: client bytes pass the guard before net/http reads
	// them; the metrics listener is not guarded (guard.go says why).
	srv.ConnContext = guard.WithConn
	// Client connections the front leaves to net/http (§10.6), and those
	// that spliced exchanges took (hijack.go), reach net/http through
	// handoff. Shutdown closes it, as ln; serve does too, in case it
	// returns before that Serve began.
	handoff := front.NewHandoff(ln.Addr())
	wd.xenv.Rejoin = handoff
	defer handoff.Close()
	go srv.Serve(handoff)
	errc := make(chan error, 2)
	var msrv *http.Server
	if mln != nil {
		// §10.1: that listener serves /metrics only.
		mux := http.NewServeMux()
		mux.Handle("/metrics", wd.metricsHandler)
		msrv = wd.newServer(mux)
		go func() { errc <- msrv.Serve(mln) }()
		// Before "listening on": whoever waits for that line (the
		// conformance suite) finds this one in the log already.
		wd.log.Printf("metrics on %s", dialAddr(mln.Addr()))
	}
	guarded := guard.Listener{Listener: ln, Guard: wd.guard}
	// The front first: shutdown closes the listener of the first it stops.
	var servers []shutdowner
	if wd.cfg.NetHTTPOnly {
		go func() { errc <- srv.Serve(guarded) }()
	} else {
		fs := wd.newFront(handoff)
		servers = append(servers, fs)
		go func() { errc <- fs.Serve(guarded) }()
	}
	servers = append(servers, srv)
	if msrv != nil {
		servers = append(servers, msrv)
	}
	// The conformance suite reads the address from this line.
	wd.log.Printf("listening on %s", dialAddr(ln.Addr()))
	select {
	case <-ctx.Done():
		return wd.shutdown(servers...)
	case err := <-errc:
		wd.shutdown(servers...)
		return errors.New("watchdog: " + err.Error())
	case err := <-wd.pool.Fatal():
		wd.log.Errorf("%v", err)
		wd.shutdown(servers...)
		return err
	}
}

// dialAddr is an address a client can connect to: an unspecified host (all
// interfaces) is given as 127.0.0.1.
func dialAddr(a net.Addr) string {
	if t, ok := a.(*net.TCPAddr); ok && t.IP.IsUnspecified() {
		return net.JoinHostPort("127.0.0.1", strconv.Itoa(t.Port))
	}
	return a.String()
}

// newServer applies the timeouts of PROTOCOL.md §10.2 and the header limit
// of §7.1.
func (wd *Watchdog) newServer(h http.Handler) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: wd.cfg.ReadTimeout,
		ReadTimeout:       wd.cfg.ReadTimeout,
		WriteTimeout:      wd.writeTimeout(),
		IdleTimeout:       90 * time.Second,
		MaxHeaderBytes:    wd.cfg.MaxHeaderBytes,
		ErrorLog:          log.New(serverLog{wd.log}, "", 0),
	}
}

// newFront is the watchdog's own front for plain HTTP/1.1 requests
// (PROTOCOL.md §10.6), with net/http's timeouts and handing what it leaves
// to net/http through handoff.
func (wd *Watchdog) newFront(handoff *front.Handoff) *front.Server {
	return &front.Server{
		Handler: wd, Guard: wd.guard, Log: wd.log, Handoff: handoff,
		ReadTimeout: wd.cfg.ReadTimeout, WriteTimeout: wd.writeTimeout(), IdleTimeout: 90 * time.Second,
		BodyMax: exchange.SpliceBodyMin - 1, // larger bodies are spliced, on net/http's path
	}
}

// shutdowner is a server shutdown stops: net/http's or the front.
type shutdowner interface {
	Shutdown(ctx context.Context) error
	Close() error
}

// writeTimeout is how long writing a response may take from the end of its
// request head (PROTOCOL.md §10.2): write_timeout beyond exec_timeout; none
// without an exec_timeout.
func (wd *Watchdog) writeTimeout() time.Duration {
	if wd.cfg.ExecTimeout > 0 {
		return wd.cfg.ExecTimeout + wd.cfg.WriteTimeout
	}
	return 0
}

// serverLog routes net/http's own messages to the watchdog's log.
type serverLog struct{ l *obs.Logger }

func (s serverLog) Write(p []byte) (int, error) {
	s.l.Warnf("%s", bytes.TrimRight(p, "\n"))
	return len(p), nil
}

// shutdownAnswerMax bounds how long, after shutdown_timeout, the answers
// to the requests it cut are given to be written (PROTOCOL.md §9.4). It
// covers net/http's wait before closing a connection after its last
// response (rstAvoidanceDelay, 500 ms).
const shutdownAnswerMax = time.Second

// shutdown is PROTOCOL.md §9.4: fail readiness, stop accepting, let
// in-flight and queued requests finish within shutdown_timeout, close every
// request pipe. Requests still held at the end of the grace period are
// answered 503 unavailable on a closing connection (or aborted, §8.7, once
// their head went out); then what still runs is killed.
func (wd *Watchdog) shutdown(servers ...shutdowner) error {
	deadline := time.Now().Add(wd.cfg.ShutdownTimeout)
	wd.stopping.Store(true)
	wd.log.Printf("shutting down: finishing requests for up to %v", wd.cfg.ShutdownTimeout)
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	var late []shutdowner
	for _, s := range servers {
		if s.Shutdown(ctx) != nil {
			late = append(late, s)
		}
	}
	// Exchanges on connections taken from net/http (hijack.go) are not
	// net/http's to wait for: the pool counts every request it holds.
	drained := wd.pool.WaitHeld(deadline)
	if late != nil || !drained {
		wd.log.Warnf("requests still running after shutdown_timeout: answering them 503 and closing their connections")
		wd.pool.Abandon()
		deadline = time.Now().Add(shutdownAnswerMax)
		wd.pool.WaitHeld(deadline)
		ctx, cancel := context.WithDeadline(context.Background(), deadline)
		defer cancel()
		for _, s := range late {
			if err := s.Shutdown(ctx); err != nil {
				s.Close()
			}
		}
	}
	wd.pool.Close(deadline)
	wd.log.Printf("stopped")
	return nil
}
