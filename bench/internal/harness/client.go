package harness

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"
)

// fixedClient sends an exact number of requests over kept-alive connections, each as soon as
// the answer to the one before has come, and checks every answer: the load of make
// bench-counts, whose figures are counts per request, so the number of requests must be known
// exactly and the connections must be open before the counting starts (an accept is not part
// of a request).
type fixedClient struct {
	conns []*clientConn
}

type clientConn struct {
	c  net.Conn
	br *bufio.Reader
}

// echoBody is the echo1k workload's body, as wrk's script sends it (writeEchoScript).
var echoBody = strings.Repeat("abcdefghijklmnop", 64)

func dialFixed(addr string, conns int) (*fixedClient, error) {
	fc := &fixedClient{}
	for i := 0; i < conns; i++ {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			fc.close()
			return nil, err
		}
		fc.conns = append(fc.conns, &clientConn{c: c, br: bufio.NewReader(c)})
	}
	return fc, nil
}

func (fc *fixedClient) close() {
	for _, c := range fc.conns {
		c.c.Close()
	}
}

// requestBytes is one request of the workload, as wrk would send it.
func requestBytes(w Workload) (req []byte, want string) {
	if w == Echo1K {
		return []byte(fmt.Sprintf("POST / HTTP/1.1\r\nHost: bench\r\nContent-Type: application/octet-stream\r\nContent-Length: %d\r\n\r\n%s",
			len(echoBody), echoBody)), echoBody
	}
	return []byte("GET / HTTP/1.1\r\nHost: bench\r\n\r\n"), "Hello, world!\n"
}

// run sends n requests of the workload, shared out over the connections, and returns the first
// wrong answer or error.
func (fc *fixedClient) run(w Workload, n int, timeout time.Duration) error {
	req, want := requestBytes(w)
	return fc.send(string(w), req, want, n, timeout)
}

// send sends n copies of req, shared out over the connections, and returns the first answer
// that is not 200 with the body want, or the first error; label names the requests in it.
func (fc *fixedClient) send(label string, req []byte, want string, n int, timeout time.Duration) error {
	var wg sync.WaitGroup
	errs := make(chan error, len(fc.conns))
	for i, c := range fc.conns {
		count := n / len(fc.conns)
		if i < n%len(fc.conns) {
			count++
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			c.c.SetDeadline(time.Now().Add(timeout))
			for j := 0; j < count; j++ {
				if err := c.exchange(req, want); err != nil {
					errs <- fmt.Errorf("%s request %d: %v", label, j+1, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	return <-errs
}

func (c *clientConn) exchange(req []byte, want string) error {
	if _, err := c.c.Write(req); err != nil {
		return err
	}
	resp, err := http.ReadResponse(c.br, nil)
	if err != nil {
		return err
	}
	got, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return err
	}
	if resp.StatusCode != 200 || string(got) != want {
		return fmt.Errorf("answer %d with %d bytes; want 200 and %d bytes", resp.StatusCode, len(got), len(want))
	}
	return nil
}
