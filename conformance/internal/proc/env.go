package proc

import (
	"os"
	"sort"
	"strings"
)

// Environ is this process's environment without the variables drop names,
// overlaid with each of overlays in turn, sorted: the environment the suite
// gives a process it starts, so the caller's shell cannot change a check.
func Environ(drop func(name string) bool, overlays ...map[string]string) []string {
	m := map[string]string{}
	for _, kv := range os.Environ() {
		k, v, _ := strings.Cut(kv, "=")
		if !drop(k) {
			m[k] = v
		}
	}
	for _, o := range overlays {
		for k, v := range o {
			m[k] = v
		}
	}
	env := make([]string, 0, len(m))
	for k, v := range m {
		env = append(env, k+"="+v)
	}
	sort.Strings(env)
	return env
}

// IsProtocolVariable reports the variables of the protocol (AFTERBURN_*) and
// of the fixture contract (FIXTURE_*), which only the suite may set.
func IsProtocolVariable(name string) bool {
	return strings.HasPrefix(name, "AFTERBURN_") || strings.HasPrefix(name, "FIXTURE_")
}
