package harness

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// Language is how the harness starts one language's functions. Every command runs from the
// repository root. All four programs answer an empty body with "Hello, world!\n" and echo any
// other body, so every configuration does the same work.
type Language struct {
	Name string
	// AfterBurn is the worker command the watchdog starts: the function on the library.
	AfterBurn []string
	// Classic reads the body on stdin and writes the answer to stdout; the fork baseline
	// starts it once per request.
	Classic []string
	// Server is the language's own minimal HTTP server on 127.0.0.1:$PORT, the upstream of
	// the HTTP proxy baseline.
	Server []string
	// NoLib answers the handshake without the library: the cold-start baseline.
	NoLib []string
	// Floor, if set, is the thinnest worker on what the library is built on, with none of
	// its own work: how near the library comes to what its dependencies allow. Set for
	// Node, whose issue prescribes them (llhttp, undici's Request and Response).
	Floor []string
	// IO is the worker command of the lanes scenario (lanes.go): GET /io waits 50 ms without
	// holding its lane's runtime and answers 1 KiB.
	IO []string
	// Built lists files that exist once `make bench-build` has built the language.
	Built []string
	// Warmup is the least unmeasured load its long-lived configurations get before the
	// first repetition (outside QUICK): a JIT compiles for seconds before the steady state
	// that a long-lived worker lives in.
	Warmup time.Duration
}

const javaClasses = "bench/build/java"

// javaWorkerFlags start a long-lived JVM as java/README.md recommends for a worker (the
// serial collector with a small young generation: short, rare pauses).
var javaWorkerFlags = []string{"java", "-XX:+UseSerialGC", "-Xmn32m"}

// Languages are the four languages the benchmarks know, in report order.
func Languages(root string) []Language {
	py := "python/.venv/bin/python"
	javaRuntime := readClasspath(root, "bench/build/java-runtime.classpath")
	return []Language{
		{
			Name:      "go",
			AfterBurn: []string{"bench/bin/go-afterburn"},
			Classic:   []string{"bench/bin/go-classic"},
			Server:    []string{"bench/bin/go-server"},
			NoLib:     []string{"bench/bin/limit-child"},
			IO:        []string{"bench/bin/go-io"},
			Built:     []string{"bench/bin/go-afterburn", "bench/bin/go-classic", "bench/bin/go-server", "bench/bin/limit-child", "bench/bin/go-io"},
		},
		{
			Name:      "python",
			AfterBurn: []string{py, "bench/functions/python/afterburn_fn.py"},
			Classic:   []string{py, "bench/functions/python/classic.py"},
			Server:    []string{py, "bench/functions/python/server.py"},
			NoLib:     []string{py, "bench/functions/python/nolib.py"},
			IO:        []string{py, "bench/functions/python/io_fn.py"},
			Built:     []string{py},
		},
		{
			Name:      "node",
			AfterBurn: []string{"node", "bench/functions/node/afterburn_fn.js"},
			Classic:   []string{"node", "bench/functions/node/classic.js"},
			Server:    []string{"node", "bench/functions/node/server.js"},
			NoLib:     []string{"node", "bench/functions/node/nolib.js"},
			IO:        []string{"node", "bench/functions/node/io_fn.js"},
			Floor:     []string{"node", "bench/functions/node/floor.js"},
			Built:     []string{"node/node_modules"},
		},
		{
			Name: "java",
			// Both long-lived JVMs get the flags java/README.md recommends for a worker.
			AfterBurn: append(slices.Clone(javaWorkerFlags), "-cp", javaClasses+":"+javaRuntime, "AfterBurnFn"),
			Classic:   []string{"java", "-cp", javaClasses, "Classic"},
			// The JDK's HttpServer waits for Nagle's algorithm unless told not to.
			Server: append(slices.Clone(javaWorkerFlags), "-Dsun.net.httpserver.nodelay=true", "-cp", javaClasses, "Server"),
			NoLib:  []string{"java", "-cp", javaClasses, "NoLib"},
			// With lanes, one JVM serves every lane, on a thread each.
			IO:    append(slices.Clone(javaWorkerFlags), "-cp", javaClasses+":"+javaRuntime, "IoFn"),
			Built: []string{javaClasses + "/AfterBurnFn.class", javaClasses + "/IoFn.class", "bench/build/java-runtime.classpath"},
			// C2 spends about 3 s of CPU after the first seconds of load (java/README.md).
			Warmup: 10 * time.Second,
		},
	}
}

// readClasspath reads the runtime classpath `make bench-build` wrote (the library jar and
// its dependencies); "" when it is not built yet.
func readClasspath(root, rel string) string {
	b, err := os.ReadFile(filepath.Join(root, rel))
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// resolveLangs returns the named languages, in the order named, each checked to be built.
func resolveLangs(root string, names []string) ([]Language, error) {
	var out []Language
	for _, want := range names {
		found := false
		for _, l := range Languages(root) {
			if l.Name == want {
				if err := l.checkBuilt(root); err != nil {
					return nil, err
				}
				out, found = append(out, l), true
			}
		}
		if !found {
			return nil, fmt.Errorf("unknown language %q", want)
		}
	}
	return out, nil
}

// checkBuilt reports the first missing build output of a language.
func (l Language) checkBuilt(root string) error {
	for _, f := range l.Built {
		if _, err := os.Stat(filepath.Join(root, f)); err != nil {
			return fmt.Errorf("%s is not built (%s missing): run make bench-build", l.Name, f)
		}
	}
	return nil
}
