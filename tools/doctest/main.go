// Command doctest runs the shell commands a README shows (contract D of issue
// 22): every fenced code block whose info string is `sh`, each as one
// `bash -euo pipefail` script from the repository root, with a time limit.
//
//	doctest [-root DIR] [-timeout 60s] [-ready_timeout 30s] FILE.md...
//
// Info-string attributes:
//
//	```sh skip="<reason>"   not run; the reason says what this machine lacks
//	```sh serve=<port>      a server: passes once http://127.0.0.1:<port>/_/ready
//	                        (or the path of ready=/path) answers 200, then its
//	                        process group gets SIGTERM
//
// Blocks with another info string (console, text, python, ...) are not run.
// It prints one line per block and `N passed, N failed, N skipped`, and exits
// 1 when a block failed.
package main

import (
	"flag"
	"fmt"
	"os"
	"time"
)

func main() {
	o := options{stopGrace: 5 * time.Second}
	flag.StringVar(&o.root, "root", ".", "`directory` every block runs in")
	flag.DurationVar(&o.timeout, "timeout", 60*time.Second, "`limit` of one block")
	flag.DurationVar(&o.readyTimeout, "ready_timeout", 30*time.Second, "`limit` for a serve block to answer 200")
	flag.Parse()
	if flag.NArg() == 0 {
		fmt.Fprintln(os.Stderr, "usage: doctest [flags] FILE.md...")
		os.Exit(2)
	}
	sum := runFiles(flag.Args(), o, os.Stdout)
	fmt.Println(sum)
	if sum.failed > 0 {
		os.Exit(1)
	}
}
