package openfaas

import (
	"fmt"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/afterburn-dev/afterburn/go/afterburn"
	"github.com/afterburn-dev/afterburn/go/afterburn/internal/shapetest"
	handler "github.com/openfaas/templates-sdk/go-http"
)

// docsHandle is the Handle of the OpenFaaS golang-http template
// (github.com/openfaas/golang-http-template, template/golang-http/function/handler.go at
// 9644d651; Copyright OpenFaaS Ltd and Alex Ellis, MIT License), unchanged.
func docsHandle(req handler.Request) (handler.Response, error) {
	var err error

	message := fmt.Sprintf("Body: %s", string(req.Body))

	return handler.Response{
		Body:       []byte(message),
		StatusCode: http.StatusOK,
	}, err
}

func TestMain(m *testing.M) {
	if shapetest.IsWorker() {
		if err := afterburn.Serve(Handler(docsHandle)); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// The template's handler under the real watchdog, request after request on one worker.
func TestEndToEnd(t *testing.T) {
	wd := shapetest.StartWatchdog(t)
	for i, body := range []string{"hello", "", strings.Repeat("x", 100<<10)} {
		req, _ := http.NewRequest("POST", wd.Base+"/", strings.NewReader(body))
		resp, got := wd.Do(t, req, fmt.Sprintf("e2e-openfaas-%d", i))
		if resp.StatusCode != 200 || got != "Body: "+body {
			t.Errorf("POST %.20q: got %d %.30q; want 200 %.30q\nlog:\n%s", body, resp.StatusCode, got, "Body: "+body, wd.Log())
		}
	}
}
