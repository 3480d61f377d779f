package cloudevents

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"strings"
	"testing"

	cloudevents "github.com/cloudevents/sdk-go/v2"

	"github.com/afterburn-dev/afterburn/go/afterburn/internal/shapetest"
)

// receive is the receiver of the CloudEvents Go SDK's README, "To start receiving
// CloudEvents using HTTP" (github.com/cloudevents/sdk-go, README.md at d6f40309; Copyright
// the CloudEvents Authors, Apache License 2.0), unchanged but for gofmt's indentation:
// there it is passed to a client's StartReceiver, here to Start.
func receive(event cloudevents.Event) {
	// do something with event.
	fmt.Printf("%s", event)
}

func TestMain(m *testing.M) {
	if shapetest.IsWorker() {
		Start(receive)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// The README's receiver under the real watchdog: an event in binary mode and one in
// structured mode are acknowledged (204) and printed; a request that is no event is
// answered 400 with the §8.1 body naming the request id.
func TestEndToEnd(t *testing.T) {
	wd := shapetest.StartWatchdog(t)

	req, _ := http.NewRequest("POST", wd.Base+"/", strings.NewReader(`{"qty":2}`))
	for k, v := range map[string]string{"ce-specversion": "1.0", "ce-id": "e2e-bin", "ce-source": "/orders",
		"ce-type": "com.example.order", "ce-subject": "a%20b", "content-type": "application/json"} {
		req.Header.Set(k, v)
	}
	if resp, body := wd.Do(t, req, "e2e-ce-1"); resp.StatusCode != 204 || body != "" {
		t.Errorf("binary mode: got %d %q; want 204", resp.StatusCode, body)
	}
	wd.WaitLog(t, "id: e2e-bin")
	wd.WaitLog(t, "subject: a b")

	req, _ = http.NewRequest("POST", wd.Base+"/", strings.NewReader(`{"specversion":"1.0","id":"e2e-struct","source":"/s","type":"t","data":"x"}`))
	req.Header.Set("Content-Type", "application/cloudevents+json")
	if resp, body := wd.Do(t, req, "e2e-ce-2"); resp.StatusCode != 204 || body != "" {
		t.Errorf("structured mode: got %d %q; want 204", resp.StatusCode, body)
	}
	wd.WaitLog(t, "id: e2e-struct")

	req, _ = http.NewRequest("POST", wd.Base+"/", strings.NewReader(`{}`))
	req.Header.Set("Content-Type", "application/json")
	resp, body := wd.Do(t, req, "e2e-ce-3")
	var eb struct {
		Type      string `json:"type"`
		RequestID string `json:"request_id"`
	}
	json.Unmarshal([]byte(body), &eb)
	if resp.StatusCode != 400 || eb.Type != "bad_request" || eb.RequestID != "e2e-ce-3" {
		t.Errorf("no event: got %d %q; want 400 bad_request for request e2e-ce-3", resp.StatusCode, body)
	}
}
