package obs

import (
	"strconv"
	"sync/atomic"

	"github.com/afterburn-dev/afterburn/go/internal/watchdog/wire"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// Metrics are the metrics of PROTOCOL.md §10.4, on a registry of the
// watchdog's own so that several watchdogs can live in one process (tests).
type Metrics struct {
	Reg            *prometheus.Registry
	Requests       *prometheus.CounterVec
	duration       prometheus.Histogram
	QueueWait      prometheus.Histogram
	Rejected       *prometheus.CounterVec
	Restarts       *prometheus.CounterVec
	InitDuration   prometheus.Histogram
	ProtocolErrors *prometheus.CounterVec
	// Fork mode (PROTOCOL.md §2.6): workers started by kind, fork request
	// to handshake reply, template restarts by reason.
	WorkerStarts     *prometheus.CounterVec
	ForkDuration     prometheus.Histogram
	TemplateRestarts *prometheus.CounterVec
	// Lanes (PROTOCOL.md §2.5): cancellations written, late responses
	// read from draining lanes and dropped.
	LaneCancels   prometheus.Counter
	LateDiscarded prometheus.Counter
	// Isolation (PROTOCOL.md §2.7): workers killed for not exiting after
	// their exchange; processes requests left behind.
	IsolationKills     prometheus.Counter
	IsolationLeftovers prometheus.Counter
	// RequestBuffered is afterburn_request_buffer_bytes (§6.6, §10.4).
	RequestBuffered *prometheus.GaugeVec
	// byCode is requests' counter per status code, once looked up:
	// WithLabelValues formats and hashes its label on every call.
	byCode [600]atomic.Pointer[prometheus.Counter]
}

// poolGauges is what the gauges read at scrape time, in plain types: the
// states are the label values of afterburn_workers and afterburn_lanes.
type poolGauges interface {
	Inflight() int
	Queued() int
	SlotCount(state string) int
	CrashLoopingCount() int
	LaneCount(state string) int
}

// bufferGauges is what the response buffer gauge reads at scrape time.
type bufferGauges interface {
	HeldBytes(where string) int64
}

func NewMetrics(p poolGauges, b bufferGauges) *Metrics {
	m := &Metrics{
		Reg: prometheus.NewRegistry(),
		Requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "afterburn_requests_total",
			Help: "Requests answered, by HTTP status code.",
		}, []string{"code"}),
		duration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "afterburn_request_duration_seconds",
			Help:    "Time from receiving a request head to the end of its response.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2.5, 14),
		}),
		QueueWait: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "afterburn_queue_wait_seconds",
			Help:    "Time a request waited for an idle worker.",
			Buckets: prometheus.ExponentialBuckets(0.0001, 3, 14),
		}),
		Rejected: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "afterburn_requests_rejected_total",
			Help: "Error responses the watchdog raised, by PROTOCOL.md §8.2 type.",
		}, []string{"type"}),
		Restarts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "afterburn_worker_restarts_total",
			Help: "Worker replacements, by PROTOCOL.md §9.1 reason.",
		}, []string{"reason"}),
		InitDuration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "afterburn_worker_init_duration_seconds",
			Help:    "Time from starting a worker to its handshake reply.",
			Buckets: prometheus.ExponentialBuckets(0.01, 2.5, 12),
		}),
		ProtocolErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "afterburn_protocol_errors_total",
			Help: "Protocol violations by workers, by kind.",
		}, []string{"kind"}),
		RequestBuffered: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "afterburn_request_buffer_bytes",
			Help: "Bytes of request bodies held by request buffering, in memory or in temporary files.",
		}, []string{"where"}),
		WorkerStarts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "afterburn_worker_starts_total",
			Help: "Workers started, by kind: exec (the command run) or fork (forked from the template).",
		}, []string{"kind"}),
		ForkDuration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "afterburn_fork_duration_seconds",
			Help:    "Time from a fork request to the forked worker's handshake reply.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2.5, 14),
		}),
		TemplateRestarts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "afterburn_template_restarts_total",
			Help: "Template restarts, by PROTOCOL.md §9.1 reason.",
		}, []string{"reason"}),
		LaneCancels: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "afterburn_lane_cancels_total",
			Help: "Cancellations written to workers' cancel pipes at a lane's deadline (PROTOCOL.md §2.5).",
		}),
		LateDiscarded: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "afterburn_late_responses_discarded_total",
			Help: "Late responses read after a deadline and dropped, one lane or several (PROTOCOL.md §8.6, §2.5).",
		}),
		IsolationKills: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "afterburn_isolation_kills_total",
			Help: "Workers killed for not exiting within isolation_grace after their one exchange (PROTOCOL.md §2.7).",
		}),
		IsolationLeftovers: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "afterburn_isolation_leftovers_total",
			Help: "Processes a request left behind when its worker exited, killed (PROTOCOL.md §2.7).",
		}),
	}
	for _, st := range []string{"free", "busy", "draining"} {
		m.Reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name:        "afterburn_lanes",
			Help:        "Lanes of live workers by state (PROTOCOL.md §2.5).",
			ConstLabels: prometheus.Labels{"state": st},
		}, func() float64 { return float64(p.LaneCount(st)) }))
	}
	m.Reg.MustRegister(m.Requests, m.duration, m.QueueWait, m.Rejected, m.Restarts,
		m.InitDuration, m.ProtocolErrors, m.RequestBuffered,
		m.WorkerStarts, m.ForkDuration, m.TemplateRestarts, m.LaneCancels, m.LateDiscarded,
		m.IsolationKills, m.IsolationLeftovers)
	m.WorkerStarts.WithLabelValues("exec")
	m.WorkerStarts.WithLabelValues("fork")
	m.RequestBuffered.WithLabelValues("memory")
	m.RequestBuffered.WithLabelValues("file")
	m.Reg.MustRegister(
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "afterburn_requests_in_flight",
			Help: "Requests held by the watchdog, queued ones included.",
		}, func() float64 { return float64(p.Inflight()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "afterburn_queue_depth",
			Help: "Requests waiting for an idle worker.",
		}, func() float64 { return float64(p.Queued()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "afterburn_workers_crash_looping",
			Help: "Worker slots with three or more consecutive initialisation failures.",
		}, func() float64 { return float64(p.CrashLoopingCount()) }),
	)
	for _, s := range []string{"starting", "idle", "busy", "backoff"} {
		m.Reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name:        "afterburn_workers",
			Help:        "Worker slots by state.",
			ConstLabels: prometheus.Labels{"state": s},
		}, func() float64 { return float64(p.SlotCount(s)) }))
	}
	for _, where := range []string{"memory", "file"} {
		where := where
		m.Reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name:        "afterburn_response_buffer_bytes",
			Help:        "Bytes of responses read from workers and not yet written to clients, in memory or in temporary files (PROTOCOL.md §6.1).",
			ConstLabels: prometheus.Labels{"where": where},
		}, func() float64 { return float64(b.HeldBytes(where)) }))
	}
	m.Reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	// Known label values start at zero, so every series exists from the start.
	for _, r := range wire.RestartReasons {
		m.Restarts.WithLabelValues(string(r))
		m.TemplateRestarts.WithLabelValues(string(r))
	}
	for _, k := range []string{"bad_response", "unsolicited_output", "handshake", "exchange"} {
		m.ProtocolErrors.WithLabelValues(k)
	}
	for _, t := range []wire.ErrorType{wire.ErrBadRequest, wire.ErrHeadersTooLarge, wire.ErrBodyTooLarge, wire.ErrNotImplemented,
		wire.ErrOverloaded, wire.ErrUnavailable, wire.ErrWorkerCrashed, wire.ErrBadResponse, wire.ErrTimeout, wire.ErrRequestTimeout} {
		m.Rejected.WithLabelValues(string(t))
	}
	return m
}

// ObserveRequest counts one answered request.
func (m *Metrics) ObserveRequest(status int, seconds float64) {
	m.requestsWithCode(status).Inc()
	m.duration.Observe(seconds)
}

func (m *Metrics) requestsWithCode(status int) prometheus.Counter {
	if status < 0 || status >= len(m.byCode) {
		return m.Requests.WithLabelValues(strconv.Itoa(status))
	}
	if c := m.byCode[status].Load(); c != nil {
		return *c
	}
	c := m.Requests.WithLabelValues(strconv.Itoa(status))
	m.byCode[status].Store(&c)
	return c
}

// Restarted counts one restart of a worker, by reason (§9.1, §10.4).
func (m *Metrics) Restarted(reason wire.RestartReason) {
	m.Restarts.WithLabelValues(string(reason)).Inc()
}

// TemplateRestarted counts one restart of the template (§2.6, §10.4).
func (m *Metrics) TemplateRestarted(reason wire.RestartReason) {
	m.TemplateRestarts.WithLabelValues(string(reason)).Inc()
}
