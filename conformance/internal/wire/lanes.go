package wire

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/afterburn-dev/afterburn/conformance/internal/check"
	"github.com/afterburn-dev/afterburn/conformance/internal/expect"
	"github.com/afterburn-dev/afterburn/conformance/internal/vectors"
)

// Lanes in the wire layer (PROTOCOL.md §2.5): the fixture gets K lanes,
// the handshake runs on lane 1, and each vector runs unchanged on another.

// handshakeLanes performs the handshake on lane 1 and returns L = min(K,
// N) (§2.5 "Negotiation"). A reply without streams is a skip; one that
// lists streams without exchange or without a valid AfterBurn-Streams is
// a failure.
func handshakeLanes(f *fixture, br *bufio.Reader, k int) (int, error) {
	if _, err := io.WriteString(f.req, Handshake); err != nil {
		return 0, fmt.Errorf("handshake: writing it: %v", err)
	}
	r, err := readResponse(br, "OPTIONS")
	if err != nil {
		return 0, fmt.Errorf("handshake: %v", err)
	}
	if r.Status != 200 || expect.First(r.Header, "afterburn-protocol") != "1" {
		return 0, fmt.Errorf("handshake: got %s; want 200 with AfterBurn-Protocol: 1", summary(r))
	}
	caps := map[string]bool{}
	for _, h := range r.Header {
		if strings.EqualFold(h[0], "afterburn-capabilities") {
			for _, c := range strings.Split(h[1], ",") {
				caps[strings.TrimSpace(c)] = true
			}
		}
	}
	if !caps["streams"] {
		return 0, &check.SkipError{Reason: "the library does not list streams in AfterBurn-Capabilities: it serves one lane (§2.5)"}
	}
	if !caps["exchange"] {
		return 0, fmt.Errorf("handshake: got %s; a library that lists streams MUST list exchange too (§2.5)", summary(r))
	}
	v := expect.First(r.Header, "afterburn-streams")
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || strings.TrimSpace(v) != v || strings.HasPrefix(v, "+") {
		return 0, fmt.Errorf("handshake: AfterBurn-Streams %q; want a decimal N ≥ 1 (§2.5)\ngot response: %s", v, summary(r))
	}
	return min(k, n), nil
}

// laneOneServes requires lane 1 to answer an echo: after a framing error
// on another lane the process lives on (§2.5 "Serving").
func laneOneServes(f *fixture) error {
	if _, err := io.WriteString(f.req, "GET /echo HTTP/1.1\r\nHost: afterburn\r\nContent-Length: 0\r\n\r\n"); err != nil {
		return fmt.Errorf("after its lane ended, writing to lane 1: %v (§2.5: the error ends that lane alone)", err)
	}
	r, err := readResponse(bufio.NewReader(f.resp), "GET")
	if err != nil {
		return fmt.Errorf("after its lane ended, lane 1: %v (§2.5: the error ends that lane alone)", err)
	}
	if r.Status != 200 {
		return fmt.Errorf("after its lane ended, lane 1 answered %s; want 200 (§2.5)", summary(r))
	}
	return nil
}

// exitedOrServes accepts either ending of a lane the library closed
// itself: the process exits with the wanted status, as with one lane, or
// it lives on and lane 1 still serves (§2.5 "ends that lane alone").
func exitedOrServes(ctx context.Context, f *fixture, want vectors.Exit) error {
	select {
	case <-f.done:
		return wantExit(ctx, f, want)
	default:
	}
	if err := laneOneServes(f); err != nil {
		// Lane 1 is gone too: then the process must be exiting.
		if xerr := wantExit(ctx, f, want); xerr != nil {
			return fmt.Errorf("%v; and %v", err, xerr)
		}
	}
	return nil
}
