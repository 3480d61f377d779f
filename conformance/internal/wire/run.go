package wire

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/afterburn-dev/afterburn/conformance/internal/check"
	"github.com/afterburn-dev/afterburn/conformance/internal/expect"
	"github.com/afterburn-dev/afterburn/conformance/internal/vectors"
)

// Handshake is the exact handshake request of PROTOCOL.md §3.1.
const Handshake = "OPTIONS * HTTP/1.1\r\nHost: afterburn\r\nAfterBurn-Handshake: 1\r\nContent-Length: 0\r\n\r\n"

// Run runs one vector against a fresh fixture process. It returns nil when
// every expect entry holds; otherwise an error whose text is the failure
// report: the request, got/want and the fixture's output.
func Run(ctx context.Context, function string, v *vectors.Vector) error {
	return RunOnLane(ctx, function, v, 1, 0)
}

// RunOnLane is Run with the fixture started with lanes lanes (§2.5): after
// the handshake on lane 1 the vector runs, unchanged, on lane 2 + n mod
// (L − 1), L the lanes both sides use. It returns a *check.SkipError when
// the library does not list streams, or when the vector cannot run on
// another lane (no handshake, or its own AFTERBURN_FDS).
func RunOnLane(ctx context.Context, function string, v *vectors.Vector, lanes, n int) error {
	if lanes > 1 && v.Env["AFTERBURN_FDS"] != "" {
		return &check.SkipError{Reason: fmt.Sprintf("with -lanes %d: the vector sets AFTERBURN_FDS itself; lanes need the fd mode of §2.2 (§2.5)", lanes)}
	}
	f, err := startFixture(function, v.Env, lanes)
	if err != nil {
		return err
	}
	defer f.stop()
	if dl, ok := ctx.Deadline(); ok {
		for _, l := range f.lanes {
			l.resp.SetReadDeadline(dl)
			l.req.SetWriteDeadline(dl)
		}
	}
	// PROTOCOL.md §3.3 and README: one buffered reader for the life of
	// the process, so bytes read ahead are never lost between responses.
	br := bufio.NewReaderSize(f.resp, 64<<10)
	if lanes <= 1 || !v.WantsHandshake() {
		// A vector that makes its own handshake runs on lane 1, where the
		// handshake belongs (§2.5 "Negotiation"), with the lanes passed.
		if err := runVector(ctx, f, f.lanes[0], br, v, true); err != nil {
			return fmt.Errorf("%v\nrequest: %s\n%s", err, describeRequest(v), f.logs())
		}
		return nil
	}
	l, err := handshakeLanes(f, br, lanes)
	if err != nil {
		var skip *check.SkipError
		if errors.As(err, &skip) {
			return err
		}
		return fmt.Errorf("%v\n%s", err, f.logs())
	}
	if l < 2 {
		return &check.SkipError{Reason: fmt.Sprintf("the library states AfterBurn-Streams: %d; no lane beside lane 1 to run the vector on (§2.5)", l)}
	}
	j := 2 + n%(l-1)
	ln := f.lanes[j-1]
	if err := runVector(ctx, f, ln, bufio.NewReaderSize(ln.resp, 64<<10), v, false); err != nil {
		return fmt.Errorf("on lane %d of %d: %v\nrequest: %s\n%s", j, l, err, describeRequest(v), f.logs())
	}
	return nil
}

// runVector writes the vector to lane ln and checks the responses read
// from br. With handshake the handshake goes first on that lane (lane 1);
// on another lane it was done on lane 1 already.
func runVector(ctx context.Context, f *fixture, ln lane, br *bufio.Reader, v *vectors.Vector, handshakeFirst bool) error {
	if handshakeFirst && v.WantsHandshake() {
		if err := handshake(f, br); err != nil {
			return err
		}
	}
	// The writer runs apart: a library may answer (and stop reading)
	// before the request is complete, or stream its answer while the
	// request is still being written (§6.2).
	wrote := make(chan error, 1)
	go func() {
		var werr error
		for _, seg := range v.Segments() {
			if _, err := ln.req.Write(seg); err != nil {
				werr = err
				break
			}
		}
		if v.CloseRequestPipe {
			ln.req.Close() // §2.5: EOF on one lane ends that lane only
		}
		wrote <- werr
	}()
	methods := requestMethods(v.RequestBytes())
	for i := range v.Expect {
		e := &v.Expect[i]
		method := "GET"
		if i < len(methods) {
			method = methods[i]
		}
		if err := checkEntry(ctx, f, ln, br, e, method, v.CloseRequestPipe); err != nil {
			werr := ""
			select {
			case err := <-wrote:
				if err != nil {
					werr = fmt.Sprintf(" (writing the request stopped: %v)", err)
				}
			default:
			}
			return fmt.Errorf("expect[%d] %s: %v%s", i, e.Kind(), err, werr)
		}
	}
	return nil
}

// handshake performs §3.1/§3.2 and requires a 200 with AfterBurn-Protocol: 1.
func handshake(f *fixture, br *bufio.Reader) error {
	if _, err := io.WriteString(f.req, Handshake); err != nil {
		return fmt.Errorf("handshake: writing it: %v", err)
	}
	r, err := readResponse(br, "OPTIONS")
	if err != nil {
		return fmt.Errorf("handshake: %v", err)
	}
	if r.Status != 200 || expect.First(r.Header, "afterburn-protocol") != "1" {
		return fmt.Errorf("handshake: got %s; want 200 with AfterBurn-Protocol: 1", summary(r))
	}
	return nil
}

// requestMethods lists the methods of the requests in b, in order, as far
// as net/http can parse them, so responses to HEAD are read without a body.
func requestMethods(b []byte) []string {
	var out []string
	r := bufio.NewReader(bytes.NewReader(b))
	for {
		req, err := http.ReadRequest(r)
		if err != nil {
			return out
		}
		out = append(out, req.Method)
		if _, err := io.Copy(io.Discard, req.Body); err != nil {
			return out
		}
	}
}

// checkEntry reads the response for one expect entry; method is that of
// the request it answers.
// closed says the vector closed its request pipe.
func checkEntry(ctx context.Context, f *fixture, ln lane, br *bufio.Reader, e *vectors.Expect, method string, closed bool) error {
	other := ln.req != f.lanes[0].req
	switch {
	case e.EOF && other && closed:
		// §2.5: the library exits once every lane it serves has read EOF.
		for _, l := range f.lanes {
			l.req.Close()
		}
		if err := wantEOF(br); err != nil {
			return err
		}
		return wantExit(ctx, f, e.WantExit())
	case e.EOF && other:
		// The library ended the lane itself (§8.3 after a head, §2.5): it
		// may exit as on lane 1, or end that lane alone and serve on.
		if err := wantEOF(br); err != nil {
			return err
		}
		return exitedOrServes(ctx, f, e.WantExit())
	case e.EOF:
		if err := wantEOF(br); err != nil {
			return err
		}
		return wantExit(ctx, f, e.WantExit())
	case e.Reject != nil:
		r, err := readResponse(br, method)
		if err != nil {
			return err
		}
		if err := expect.Reject(e.Reject, r); err != nil {
			return fmt.Errorf("%v\ngot response: %s", err, summary(r))
		}
		// §8.8: after the error response the library stops.
		if err := wantEOF(br); err != nil {
			return fmt.Errorf("after the error response: %v", err)
		}
		if other {
			// §2.5: a framing error on one lane ends that lane alone; the
			// library serves its other lanes on.
			return laneOneServes(f)
		}
		return wantExit(ctx, f, vectors.Exit{NonZero: true})
	case e.Echo != nil:
		r, err := readResponse(br, method)
		if err != nil {
			return err
		}
		if err := expect.Echo(e.Echo, e.AbsentHeaders, r); err != nil {
			return fmt.Errorf("%v\ngot response: %s", err, summary(r))
		}
	case e.Response != nil:
		if e.Response.NoBody {
			method = "HEAD" // README: a no_body response is read as one to HEAD
		}
		r, err := readResponse(br, method)
		if err != nil {
			return err
		}
		if err := expect.Check(e.Response, r); err != nil {
			return fmt.Errorf("%v\ngot response: %s", err, summary(r))
		}
	}
	return nil
}

// readResponse reads one response and its body. A response that is not
// HTTP/1.1 or is unframed (§4.4) is an error; a body cut short is reported
// as Incomplete.
func readResponse(br *bufio.Reader, method string) (*expect.Response, error) {
	hr, err := http.ReadResponse(br, &http.Request{Method: method})
	if err != nil {
		if errors.Is(err, os.ErrDeadlineExceeded) {
			return nil, errors.New("timed out waiting for a response")
		}
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return nil, fmt.Errorf("response pipe closed instead of a response (%v)", err)
		}
		return nil, fmt.Errorf("reading a response: %v", err)
	}
	if hr.Proto != "HTTP/1.1" {
		return nil, fmt.Errorf("status line protocol %q; want HTTP/1.1 (§4.4)", hr.Proto)
	}
	chunked := len(hr.TransferEncoding) > 0
	bodiless := method == "HEAD" || hr.StatusCode == 204 || hr.StatusCode == 304 || hr.StatusCode/100 == 1
	if !bodiless && !chunked && hr.ContentLength < 0 {
		return nil, fmt.Errorf("response %d is framed by neither Content-Length nor chunked (§4.4)", hr.StatusCode)
	}
	body, berr := io.ReadAll(hr.Body)
	hr.Body.Close()
	if errors.Is(berr, os.ErrDeadlineExceeded) {
		return nil, fmt.Errorf("timed out reading the body of %d after %d bytes", hr.StatusCode, len(body))
	}
	return expect.FromHTTP(hr, body, berr), nil
}

// wantEOF requires the response pipe to be at EOF: no byte more.
func wantEOF(br *bufio.Reader) error {
	b, err := br.Peek(1)
	switch {
	case err == io.EOF:
		return nil
	case errors.Is(err, os.ErrDeadlineExceeded):
		return errors.New("response pipe not closed: got neither EOF nor a byte before the timeout")
	case err != nil:
		return fmt.Errorf("reading the response pipe: %v", err)
	}
	more, _ := br.Peek(br.Buffered())
	return fmt.Errorf("got unexpected bytes %q; want EOF on the response pipe", clip(append(b[:0:0], more...), 200))
}

func wantExit(ctx context.Context, f *fixture, want vectors.Exit) error {
	code, err := f.exit(ctx)
	if err != nil {
		return fmt.Errorf("want exit status %s: %v", want, err)
	}
	if !want.Matches(code) {
		return fmt.Errorf("process ended with %s; want exit status %s", f.exitString(), want)
	}
	return nil
}

// summary renders a response for a failure report.
func summary(r *expect.Response) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d", r.Status)
	for _, h := range r.Header {
		fmt.Fprintf(&b, " | %s: %s", h[0], h[1])
	}
	if r.Chunked {
		b.WriteString(" | (chunked)")
	}
	fmt.Fprintf(&b, " | body %q", clip(r.Body, 300))
	if r.Incomplete {
		b.WriteString(" (incomplete)")
	}
	return b.String()
}

// describeRequest shows the vector's segments, long ones clipped.
func describeRequest(v *vectors.Vector) string {
	var parts []string
	total := 0
	for _, s := range v.Request {
		d := s.String()
		if len(d) > 400 {
			d = d[:400] + "…"
		}
		total += len(d)
		if total > 2000 {
			parts = append(parts, fmt.Sprintf("… (%d segments in all)", len(v.Request)))
			break
		}
		parts = append(parts, d)
	}
	s := strings.Join(parts, " + ")
	if !v.WantsHandshake() {
		s += " (no handshake by the suite)"
	}
	if v.CloseRequestPipe {
		s += " then close the request pipe"
	}
	if len(v.Env) > 0 {
		s += fmt.Sprintf(" with env %v", v.Env)
	}
	return s
}

func clip(b []byte, n int) string {
	if len(b) <= n {
		return string(b)
	}
	return string(b[:n]) + fmt.Sprintf("… (%d bytes)", len(b))
}

// timeoutCtx derives the per-vector context.
func timeoutCtx(parent context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(parent, d)
}
