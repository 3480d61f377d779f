package lambda

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/afterburn-dev/afterburn/go/afterburn/internal/shapetest"
	"github.com/aws/aws-lambda-go/events"
)

// docsHandler is the handler of ExampleLambdaFunctionURLRequest in aws-lambda-go v1.54.0
// (events/example_lambda_function_url_test.go; Copyright Amazon.com, Inc., Apache License
// 2.0), unchanged: there it is passed to aws-lambda-go's lambda.Start, here to Start.
func docsHandler(ctx context.Context, request *events.LambdaFunctionURLRequest) (*events.LambdaFunctionURLResponse, error) {
	fmt.Printf("Processing request data for request %s.\n", request.RequestContext.RequestID)
	fmt.Printf("Body size = %d.\n", len(request.Body))

	fmt.Println("Headers:")
	for key, value := range request.Headers {
		fmt.Printf("    %s: %s\n", key, value)
	}

	return &events.LambdaFunctionURLResponse{Body: request.Body, StatusCode: 200}, nil
}

func TestMain(m *testing.M) {
	if shapetest.IsWorker() {
		Start(docsHandler)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// The documentation's handler under the real watchdog: the request id the client sent
// is the event's requestContext.requestId, the body comes back, the prints are logged.
func TestEndToEnd(t *testing.T) {
	wd := shapetest.StartWatchdog(t)
	for i, body := range []string{`{"order":42}`, ""} {
		id := fmt.Sprintf("e2e-lambda-%d", i)
		req, _ := http.NewRequest("POST", wd.Base+"/orders?x=1", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-Trace", "t1")
		resp, got := wd.Do(t, req, id)
		if resp.StatusCode != 200 || got != body {
			t.Errorf("POST %q: got %d %q; want 200 and the body back\nlog:\n%s", body, resp.StatusCode, got, wd.Log())
		}
		wd.WaitLog(t, fmt.Sprintf("Processing request data for request %s.", id))
		wd.WaitLog(t, fmt.Sprintf("Body size = %d.", len(body)))
	}
	wd.WaitLog(t, "x-trace: t1")
}
