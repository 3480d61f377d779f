package watchdog

import (
	"io"

	"github.com/afterburn-dev/afterburn/go/internal/watchdog/config"
)

// The command's API (cmd/afterburn-watchdog): the settings live in package
// config; these names keep the command's calls as they were.

// Config is the watchdog's configuration (PROTOCOL.md §10.2).
type Config = config.Config

// ParseConfig reads the settings from args and the environment.
func ParseConfig(args []string, getenv func(string) string, usage io.Writer) (Config, error) {
	return config.ParseConfig(args, getenv, usage)
}

// RequestedLogFormat is the log_format asked for by args or the environment,
// read past any setting that does not parse (§9.5).
func RequestedLogFormat(args []string, getenv func(string) string) string {
	return config.RequestedLogFormat(args, getenv)
}

// Log formats, the values of log_format.
const (
	LogText = config.LogText
	LogJSON = config.LogJSON
)
