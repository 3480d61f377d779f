// Command fork-server is the "fork per request" baseline of the benchmarks: what a classic
// watchdog does. For every HTTP request it starts the function's command, writes the request
// body to the process's stdin, and answers with whatever the process wrote to stdout once it
// has exited. The process pays its whole start-up on every request, which is the cost
// AfterBurn exists to remove.
//
//	fork-server -addr 127.0.0.1:0 -- CMD ARGS...
//
// It logs "fork-server: listening on ADDR" once it accepts connections.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"os/exec"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:8080", "address to listen on")
	flag.Parse()
	argv := flag.Args()
	if len(argv) == 0 {
		fmt.Fprintln(os.Stderr, "usage: fork-server [-addr ADDR] -- CMD ARGS...")
		os.Exit(2)
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		log.Fatalf("fork-server: %v", err)
	}
	fmt.Fprintf(os.Stderr, "fork-server: listening on %s\n", ln.Addr())
	log.Fatal(http.Serve(ln, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		cmd := exec.Command(argv[0], argv[1:]...)
		// The classic watchdog's request metadata, so a function could route on it.
		cmd.Env = append(os.Environ(), "Http_Method="+r.Method, "Http_Path="+r.URL.Path)
		cmd.Stdin = r.Body
		var stdout bytes.Buffer
		cmd.Stdout = &stdout
		cmd.Stderr = os.Stderr
		if err := cmd.Run(); err != nil {
			http.Error(w, "function failed: "+err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "text/plain")
		w.Write(stdout.Bytes())
	})))
}
