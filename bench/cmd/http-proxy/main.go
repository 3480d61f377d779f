// Command http-proxy is the "HTTP proxy mode" baseline of the benchmarks: the way
// of-watchdog's mode=http works. It starts the function's own HTTP server once, with PORT set
// to a free loopback port, waits until that port accepts connections, and forwards every
// request to it with httputil.ReverseProxy over loopback TCP (Go's dialer sets TCP_NODELAY).
//
//	http-proxy -addr 127.0.0.1:0 -- CMD ARGS...
//
// It logs "http-proxy: listening on ADDR" once the upstream accepts connections.
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
	"time"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:8080", "address to listen on")
	upstreamWait := flag.Duration("upstream_wait", 60*time.Second, "how long the upstream may take to listen")
	flag.Parse()
	argv := flag.Args()
	if len(argv) == 0 {
		fmt.Fprintln(os.Stderr, "usage: http-proxy [-addr ADDR] -- CMD ARGS...")
		os.Exit(2)
	}
	upstreamAddr, err := freeLoopbackAddr()
	if err != nil {
		log.Fatalf("http-proxy: %v", err)
	}
	_, port, _ := net.SplitHostPort(upstreamAddr)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), "PORT="+port)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		log.Fatalf("http-proxy: start upstream: %v", err)
	}
	go func() {
		err := cmd.Wait()
		log.Fatalf("http-proxy: upstream exited: %v", err)
	}()
	if err := waitAccepting(upstreamAddr, *upstreamWait); err != nil {
		log.Fatalf("http-proxy: %v", err)
	}
	target := &url.URL{Scheme: "http", Host: upstreamAddr}
	proxy := httputil.NewSingleHostReverseProxy(target)
	proxy.Transport = &http.Transport{
		DialContext:         (&net.Dialer{}).DialContext,
		MaxIdleConns:        256,
		MaxIdleConnsPerHost: 256,
		IdleConnTimeout:     90 * time.Second,
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		log.Fatalf("http-proxy: %v", err)
	}
	fmt.Fprintf(os.Stderr, "http-proxy: listening on %s\n", ln.Addr())
	go func() {
		sig := make(chan os.Signal, 1)
		signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
		<-sig
		cmd.Process.Kill()
		os.Exit(0)
	}()
	log.Fatal(http.Serve(ln, proxy))
}

func freeLoopbackAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// waitAccepting polls a TCP connect: the upstream's own readiness signal.
func waitAccepting(addr string, limit time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("upstream %s not accepting after %v: %v", addr, limit, err)
		case <-time.After(10 * time.Millisecond):
		}
	}
}
