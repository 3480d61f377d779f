package watchdog

import (
	"strconv"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// metrics are the metrics of PROTOCOL.md §10.4, on a registry of the
// watchdog's own so that several watchdogs can live in one process (tests).
type metrics struct {
	reg            *prometheus.Registry
	requests       *prometheus.CounterVec
	duration       prometheus.Histogram
	queueWait      prometheus.Histogram
	rejected       *prometheus.CounterVec
	restarts       *prometheus.CounterVec
	initDuration   prometheus.Histogram
	protocolErrors *prometheus.CounterVec
	// Fork mode (PROTOCOL.md §2.6): workers started by kind, fork request
	// to handshake reply, template restarts by reason.
	workerStarts     *prometheus.CounterVec
	forkDuration     prometheus.Histogram
	templateRestarts *prometheus.CounterVec
	// Lanes (PROTOCOL.md §2.5): cancellations written, late responses
	// read from draining lanes and dropped.
	laneCancels   prometheus.Counter
	lateDiscarded prometheus.Counter
	// Isolation (PROTOCOL.md §2.7): workers killed for not exiting after
	// their exchange; processes requests left behind.
	isolationKills     prometheus.Counter
	isolationLeftovers prometheus.Counter
	// requestBuffered is afterburn_request_buffer_bytes (§6.6, §10.4).
	requestBuffered *prometheus.GaugeVec
	// byCode is requests' counter per status code, once looked up:
	// WithLabelValues formats and hashes its label on every call.
	byCode [600]atomic.Pointer[prometheus.Counter]
}

// poolGauges is what the gauges read at scrape time, in plain types: the
// states are the label values of afterburn_workers and afterburn_lanes.
type poolGauges interface {
	inflight() int
	queued() int
	slotCount(state string) int
	crashLoopingCount() int
	laneCount(state string) int
}

// bufferGauges is what the response buffer gauge reads at scrape time.
type bufferGauges interface {
	heldBytes(where string) int64
}

func newMetrics(p poolGauges, b bufferGauges) *metrics {
	m := &metrics{
		reg: prometheus.NewRegistry(),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "afterburn_requests_total",
			Help: "Requests answered, by HTTP status code.",
		}, []string{"code"}),
		duration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "afterburn_request_duration_seconds",
			Help:    "Time from receiving a request head to the end of its response.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2.5, 14),
		}),
		queueWait: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "afterburn_queue_wait_seconds",
			Help:    "Time a request waited for an idle worker.",
			Buckets: prometheus.ExponentialBuckets(0.0001, 3, 14),
		}),
		rejected: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "afterburn_requests_rejected_total",
			Help: "Error responses the watchdog raised, by PROTOCOL.md §8.2 type.",
		}, []string{"type"}),
		restarts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "afterburn_worker_restarts_total",
			Help: "Worker replacements, by PROTOCOL.md §9.1 reason.",
		}, []string{"reason"}),
		initDuration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "afterburn_worker_init_duration_seconds",
			Help:    "Time from starting a worker to its handshake reply.",
			Buckets: prometheus.ExponentialBuckets(0.01, 2.5, 12),
		}),
		protocolErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "afterburn_protocol_errors_total",
			Help: "Protocol violations by workers, by kind.",
		}, []string{"kind"}),
		requestBuffered: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "afterburn_request_buffer_bytes",
			Help: "Bytes of request bodies held by request buffering, in memory or in temporary files.",
		}, []string{"where"}),
		workerStarts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "afterburn_worker_starts_total",
			Help: "Workers started, by kind: exec (the command run) or fork (forked from the template).",
		}, []string{"kind"}),
		forkDuration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "afterburn_fork_duration_seconds",
			Help:    "Time from a fork request to the forked worker's handshake reply.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2.5, 14),
		}),
		templateRestarts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "afterburn_template_restarts_total",
			Help: "Template restarts, by PROTOCOL.md §9.1 reason.",
		}, []string{"reason"}),
		laneCancels: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "afterburn_lane_cancels_total",
			Help: "Cancellations written to workers' cancel pipes at a lane's deadline (PROTOCOL.md §2.5).",
		}),
		lateDiscarded: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "afterburn_late_responses_discarded_total",
			Help: "Late responses read after a deadline and dropped, one lane or several (PROTOCOL.md §8.6, §2.5).",
		}),
		isolationKills: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "afterburn_isolation_kills_total",
			Help: "Workers killed for not exiting within isolation_grace after their one exchange (PROTOCOL.md §2.7).",
		}),
		isolationLeftovers: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "afterburn_isolation_leftovers_total",
			Help: "Processes a request left behind when its worker exited, killed (PROTOCOL.md §2.7).",
		}),
	}
	for _, st := range []string{"free", "busy", "draining"} {
		m.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name:        "afterburn_lanes",
			Help:        "Lanes of live workers by state (PROTOCOL.md §2.5).",
			ConstLabels: prometheus.Labels{"state": st},
		}, func() float64 { return float64(p.laneCount(st)) }))
	}
	m.reg.MustRegister(m.requests, m.duration, m.queueWait, m.rejected, m.restarts,
		m.initDuration, m.protocolErrors, m.requestBuffered,
		m.workerStarts, m.forkDuration, m.templateRestarts, m.laneCancels, m.lateDiscarded,
		m.isolationKills, m.isolationLeftovers)
	m.workerStarts.WithLabelValues("exec")
	m.workerStarts.WithLabelValues("fork")
	m.requestBuffered.WithLabelValues("memory")
	m.requestBuffered.WithLabelValues("file")
	m.reg.MustRegister(
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "afterburn_requests_in_flight",
			Help: "Requests held by the watchdog, queued ones included.",
		}, func() float64 { return float64(p.inflight()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "afterburn_queue_depth",
			Help: "Requests waiting for an idle worker.",
		}, func() float64 { return float64(p.queued()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "afterburn_workers_crash_looping",
			Help: "Worker slots with three or more consecutive initialisation failures.",
		}, func() float64 { return float64(p.crashLoopingCount()) }),
	)
	for _, s := range []string{"starting", "idle", "busy", "backoff"} {
		m.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name:        "afterburn_workers",
			Help:        "Worker slots by state.",
			ConstLabels: prometheus.Labels{"state": s},
		}, func() float64 { return float64(p.slotCount(s)) }))
	}
	for _, where := range []string{"memory", "file"} {
		where := where
		m.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name:        "afterburn_response_buffer_bytes",
			Help:        "Bytes of responses read from workers and not yet written to clients, in memory or in temporary files (PROTOCOL.md §6.1).",
			ConstLabels: prometheus.Labels{"where": where},
		}, func() float64 { return float64(b.heldBytes(where)) }))
	}
	m.reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	// Known label values start at zero, so every series exists from the start.
	for _, r := range restartReasons {
		m.restarts.WithLabelValues(string(r))
		m.templateRestarts.WithLabelValues(string(r))
	}
	for _, k := range []string{"bad_response", "unsolicited_output", "handshake", "exchange"} {
		m.protocolErrors.WithLabelValues(k)
	}
	for _, t := range []errorType{errBadRequest, errHeadersTooLarge, errBodyTooLarge, errNotImplemented,
		errOverloaded, errUnavailable, errWorkerCrashed, errBadResponse, errTimeout, errRequestTimeout} {
		m.rejected.WithLabelValues(string(t))
	}
	return m
}

// observeRequest counts one answered request.
func (m *metrics) observeRequest(status int, seconds float64) {
	m.requestsWithCode(status).Inc()
	m.duration.Observe(seconds)
}

func (m *metrics) requestsWithCode(status int) prometheus.Counter {
	if status < 0 || status >= len(m.byCode) {
		return m.requests.WithLabelValues(strconv.Itoa(status))
	}
	if c := m.byCode[status].Load(); c != nil {
		return *c
	}
	c := m.requests.WithLabelValues(strconv.Itoa(status))
	m.byCode[status].Store(&c)
	return c
}

// restarted counts one restart of a worker, by reason (§9.1, §10.4).
func (m *metrics) restarted(reason restartReason) {
	m.restarts.WithLabelValues(string(reason)).Inc()
}

// templateRestarted counts one restart of the template (§2.6, §10.4).
func (m *metrics) templateRestarted(reason restartReason) {
	m.templateRestarts.WithLabelValues(string(reason)).Inc()
}
