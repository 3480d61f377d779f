// Command classic is the Go function of the "fork per request" baseline: a classic-watchdog
// function that reads the request body from stdin and writes the response body to stdout,
// started once per request. Empty body: a greeting; otherwise the body echoed.
package main

import (
	"io"
	"os"
)

func main() {
	body, err := io.ReadAll(os.Stdin)
	if err != nil {
		os.Exit(1)
	}
	if len(body) == 0 {
		body = []byte("Hello, world!\n")
	}
	os.Stdout.Write(body)
}
