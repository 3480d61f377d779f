package config

import (
	"errors"
	"flag"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"time"
)

func TestParseConfig(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		args []string
		env  map[string]string
		want func(c *Config) // changes from the defaults
	}{
		{"defaults", []string{"--", "app"}, nil, func(c *Config) {}},
		{"flag", []string{"--exec_timeout=3s", "--workers", "4", "--", "app", "-x"}, nil, func(c *Config) {
			c.ExecTimeout = 3 * time.Second
			c.Workers = 4
			c.Command = []string{"app", "-x"}
		}},
		{"env", []string{"app"}, map[string]string{"exec_timeout": "10", "max_inflight": "7", "stdio": "true"}, func(c *Config) {
			c.ExecTimeout = 10 * time.Second
			c.MaxInflight = 7
			c.Stdio = true
		}},
		{"flag wins over env", []string{"--exec_timeout=1m30s", "--", "app"}, map[string]string{"exec_timeout": "5"}, func(c *Config) {
			c.ExecTimeout = 90 * time.Second
		}},
		{"plain and fractional seconds", []string{"--read_timeout=0.5", "--init_timeout", "120", "--", "app"}, nil, func(c *Config) {
			c.ReadTimeout = 500 * time.Millisecond
			c.InitTimeout = 2 * time.Minute
		}},
		{"zero disables", []string{"--exec_timeout=0", "--", "app"}, nil, func(c *Config) { c.ExecTimeout = 0 }},
		{"PORT fallback", []string{"app"}, map[string]string{"PORT": "9090"}, func(c *Config) { c.Port = 9090 }},
		{"trust_request_id off", []string{"--trust_request_id=false", "--", "app"}, nil, func(c *Config) { c.TrustRequestID = false }},
		{"response buffering", []string{"--response_buffer_memory=65536", "--buffer_dir=/var/tmp", "--", "app"},
			map[string]string{"buffer_spill_max": "0", "response_buffering": "false"}, func(c *Config) {
				c.ResponseBuffering = false
				c.ResponseBufferMemory = 65536
				c.BufferDir = "/var/tmp"
				c.BufferSpillMax = 0
			}},
		{"port wins over PORT", []string{"app"}, map[string]string{"PORT": "9090", "port": "7070"}, func(c *Config) { c.Port = 7070 }},
		{"port flag wins", []string{"--port=0", "app"}, map[string]string{"PORT": "9090"}, func(c *Config) { c.Port = 0 }},
		{"fprocess", nil, map[string]string{"fprocess": "python app.py"}, func(c *Config) {
			c.Fprocess = "python app.py"
			c.Command = []string{"/bin/sh", "-c", "python app.py"}
		}},
		{"-- wins over fprocess", []string{"--", "node", "x.js"}, map[string]string{"fprocess": "python app.py"}, func(c *Config) {
			c.Fprocess = "python app.py"
			c.Command = []string{"node", "x.js"}
		}},
		{"bools", []string{"--prefix_logs=false", "--handshake=false", "--stdio", "--", "app"}, nil, func(c *Config) {
			c.PrefixLogs, c.Handshake, c.Stdio = false, false, true
		}},
		{"the rest", []string{"--listen_host=127.0.0.1", "--write_timeout=2s", "--healthcheck_interval=30s",
			"--shutdown_timeout=1", "--max_request_body=0", "--max_header_bytes=8192", "--metrics_port=9100", "--", "app"}, nil,
			func(c *Config) {
				c.ListenHost = "127.0.0.1"
				c.WriteTimeout = 2 * time.Second
				c.HealthcheckInterval = 30 * time.Second
				c.ShutdownTimeout = time.Second
				c.MaxRequestBody = 0
				c.MaxHeaderBytes = 8192
				c.MetricsPort = 9100
			}},
		{"fork", []string{"--spawn=fork", "--fork_timeout=1.5", "app"}, nil, func(c *Config) {
			c.Spawn, c.ForkTimeout = SpawnFork, 1500*time.Millisecond
		}},
		{"isolation", []string{"--spawn=fork", "--isolation=request", "--isolation_grace=0.25", "app"}, nil, func(c *Config) {
			c.Spawn, c.Isolation, c.IsolationGrace = SpawnFork, IsolationRequest, 250*time.Millisecond
		}},
		{"json logs", []string{"app"}, map[string]string{"log_format": "json"}, func(c *Config) { c.LogFormat = LogJSON }},
		{"lanes", []string{"--lanes=4", "app"}, nil, func(c *Config) { c.Lanes = 4 }},
		{"lanes auto", []string{"app"}, map[string]string{"lanes": "auto"}, func(c *Config) { c.Lanes = LanesAuto }},
		{"metrics on port", []string{"--metrics_port=-1", "app"}, nil, func(c *Config) { c.MetricsPort = MetricsOnPort }},
		{"metrics on a free port", []string{"app"}, map[string]string{"metrics_port": "0"}, func(c *Config) { c.MetricsPort = 0 }},
		{"metrics on a free port beside a free port", []string{"--port=0", "--metrics_port=0", "app"}, nil, func(c *Config) { c.Port, c.MetricsPort = 0, 0 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseConfig(tc.args, func(k string) string { return tc.env[k] }, nil)
			if err != nil {
				t.Fatal(err)
			}
			want := Config{
				Port: 8080, MetricsPort: 8081, Workers: runtime.NumCPU(), ExecTimeout: 10 * time.Second,
				ReadTimeout: 10 * time.Second, WriteTimeout: 10 * time.Second, InitTimeout: time.Minute,
				ShutdownTimeout: 15 * time.Second, MaxRequestBody: 64 << 20, MaxHeaderBytes: 32768,
				PrefixLogs: true, Handshake: true, TrustRequestID: true, Command: []string{"app"},
				RequestBuffering: true, RequestBufferMemory: DefaultRequestBufferMemory,
				ResponseBuffering: true, ResponseBufferMemory: 1 << 20, BufferSpillMax: 1 << 30,
				Spawn: SpawnExec, ForkTimeout: 10 * time.Second, Lanes: LanesAuto, CancelGrace: time.Second,
				Isolation: IsolationNone, IsolationGrace: 500 * time.Millisecond,
				LogFormat: LogText,
			}
			tc.want(&want)
			if !reflect.DeepEqual(got, want) {
				t.Errorf("got  %+v\nwant %+v", got, want)
			}
		})
	}
}

func TestParseConfigErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args    []string
		env     map[string]string
		wantErr string
	}{
		{nil, nil, "watchdog: no worker command"},
		{[]string{"--exec_timeout=soon", "app"}, nil, `bad duration "soon"`},
		{[]string{"--exec_timeout=-1s", "app"}, nil, `negative duration "-1s"`},
		{[]string{"app"}, map[string]string{"read_timeout": "x"}, `watchdog: bad environment variable read_timeout="x"`},
		{[]string{"app"}, map[string]string{"workers": "many"}, `watchdog: bad environment variable workers="many"`},
		{[]string{"--workers=-1", "app"}, nil, "watchdog: bad workers -1"},
		{[]string{"--port=70000", "app"}, nil, "watchdog: bad port 70000"},
		{[]string{"--metrics_port=-2", "app"}, nil, "watchdog: bad metrics_port -2"},
		{[]string{"--metrics_port=70000", "app"}, nil, "watchdog: bad metrics_port 70000"},
		{[]string{"--metrics_port=8080", "app"}, nil, "watchdog: metrics_port 8080 is port too"},
		{[]string{"--port=8081", "app"}, nil, "watchdog: metrics_port 8081 is port too"},
		{[]string{"--init_timeout=0", "app"}, nil, "watchdog: bad init_timeout 0s"},
		{[]string{"--max_header_bytes=0", "app"}, nil, "watchdog: bad max_header_bytes 0"},
		{[]string{"--nope", "app"}, nil, "watchdog: flag provided but not defined: -nope"},
		{[]string{"--response_buffer_memory=-1", "app"}, nil, "watchdog: bad response_buffer_memory -1"},
		{[]string{"app"}, map[string]string{"buffer_spill_max": "-1"}, "watchdog: bad buffer_spill_max -1"},
		// PROTOCOL.md §2.7
		{[]string{"--isolation=process", "app"}, nil, `watchdog: bad isolation "process"`},
		{[]string{"--isolation=request", "app"}, nil, "watchdog: isolation=request needs spawn=fork"},
		{[]string{"--spawn=fork", "--isolation=request", "--isolation_grace=0", "app"}, nil, "watchdog: bad isolation_grace 0s"},
		{[]string{"--spawn=fork", "--isolation=request", "--max_requests=10", "app"}, nil, "have no use with isolation=request"},
		{[]string{"--spawn=fork", "--isolation=request", "--max_age=1m", "app"}, nil, "have no use with isolation=request"},
		{[]string{"--spawn=fork", "--isolation=request", "--lanes=2", "app"}, nil, "lanes > 1 with spawn=fork"},
		{[]string{"--lanes=0", "app"}, nil, `want auto or a number of lanes from 1`},
		{[]string{"--lanes=Auto", "app"}, nil, `want auto or a number of lanes from 1`},
		{[]string{"--lanes=-1", "app"}, nil, `want auto or a number of lanes from 1`},
		{[]string{"--log_format=JSON", "app"}, nil, `watchdog: bad log_format "JSON": want text or json`},
	} {
		_, err := ParseConfig(tc.args, func(k string) string { return tc.env[k] }, nil)
		if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
			t.Errorf("args %q env %v: error %v; want %q", tc.args, tc.env, err, tc.wantErr)
		}
	}
}

// TestRequestedLogFormat: the log_format asked for is read past settings that
// do not parse, with ParseConfig's precedence and its reading of values.
func TestRequestedLogFormat(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		env  string
		want string
	}{
		{nil, "", LogText},
		{nil, "json", LogJSON},
		{[]string{"-workers=x", "-log_format", "json", "--", "true"}, "", LogJSON},
		{[]string{"--exec_timeout", "soon", "--log_format=json"}, "", LogJSON},
		{[]string{"-stdio", "-log_format", "json"}, "", LogJSON},    // a bool takes no value
		{[]string{"-log_format", "text"}, "json", LogText},          // a flag wins
		{[]string{"-fprocess", "-log_format", "true"}, "", LogText}, // a value, not a flag
		{[]string{"-nosuch", "-log_format=json"}, "", LogJSON},
		{[]string{"--", "app", "-log_format", "json"}, "", LogText}, // the worker's argument
		{[]string{"app", "-log_format", "json"}, "", LogText},
		{[]string{"-log_format", "xml"}, "json", LogText},
	} {
		got := RequestedLogFormat(tc.args, func(k string) string {
			if k == "log_format" {
				return tc.env
			}
			return ""
		})
		if got != tc.want {
			t.Errorf("args %q env log_format=%q: %q; want %q", tc.args, tc.env, got, tc.want)
		}
	}
}

// TestHelpListsEverySetting: every setting of PROTOCOL.md §10.2 is a flag
// documented by --help.
func TestHelpListsEverySetting(t *testing.T) {
	t.Parallel()
	var out strings.Builder
	_, err := ParseConfig([]string{"--help"}, func(string) string { return "" }, &out)
	if !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("--help: %v; want flag.ErrHelp", err)
	}
	for _, name := range []string{"port", "listen_host", "fprocess", "workers", "exec_timeout", "read_timeout",
		"write_timeout", "max_inflight", "init_timeout", "healthcheck_interval", "shutdown_timeout",
		"max_request_body", "max_header_bytes", "prefix_logs", "stdio", "handshake", "metrics_port",
		"response_buffering", "response_buffer_memory", "buffer_dir", "buffer_spill_max", "log_format"} {
		if !strings.Contains(out.String(), "  -"+name+" ") && !strings.Contains(out.String(), "  -"+name+"\n") {
			t.Errorf("--help does not document %s:\n%s", name, out.String())
		}
	}
}
