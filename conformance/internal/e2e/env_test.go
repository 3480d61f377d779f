package e2e

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// TestWatchdogEnvDropsEverySetting: every setting of PROTOCOL.md §10.2 is also an environment
// variable (a flag wins, but an unset flag does not), so one left in the suite's environment,
// say log_format=json or lanes=4, would change every watchdog the checks start: each is dropped.
func TestWatchdogEnvDropsEverySetting(t *testing.T) {
	text, err := os.ReadFile("../../../spec/PROTOCOL.md")
	if err != nil {
		t.Fatal(err)
	}
	_, table, _ := strings.Cut(string(text), "### 10.2 Configuration")
	table, _, _ = strings.Cut(table, "### 10.3")
	names := regexp.MustCompile("(?m)^\\| `([a-z_]+)` \\|").FindAllStringSubmatch(table, -1)
	if len(names) < 30 {
		t.Fatalf("found %d settings in §10.2; want the whole table", len(names))
	}
	for _, m := range names {
		t.Setenv(m[1], "set-by-the-user")
	}
	for _, kv := range watchdogEnv(nil) {
		for _, m := range names {
			if strings.HasPrefix(kv, m[1]+"=") {
				t.Errorf("watchdogEnv passes the setting %s on to the watchdog", kv)
			}
		}
	}
}
