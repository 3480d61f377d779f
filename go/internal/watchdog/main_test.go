package watchdog

import (
	"os"
	"testing"

	"github.com/afterburn-dev/afterburn/go/internal/watchdog/internal/testworker"
)

// The test binary doubles as the worker of the watchdogs these tests start
// (internal/testworker).
func TestMain(m *testing.M) {
	testworker.RunIfChild()
	os.Exit(m.Run())
}
