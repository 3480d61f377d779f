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
	// Peers are the servers its users would run instead (peers.go), the Own one first.
	Peers []Peer
	// Variants are further AfterBurn configurations (peers.go): Python's ASGI and WSGI
	// adapters serving the apps the peers serve.
	Variants []Variant
	// Warmup is the least unmeasured load its long-lived configurations get before the
	// first repetition (outside QUICK): a JIT compiles for seconds before the steady state
	// that a long-lived worker lives in.
	Warmup time.Duration
}

const (
	javaClasses = "bench/build/java"
	// The Java peers (functions/java/peers): their classes, and the classpath of their
	// pinned dependencies that make bench-build asked Maven for.
	javaPeerClasses   = "bench/build/java-peers"
	javaPeerClasspath = "bench/build/java-peers.classpath"
	// The Python peers' venv, from functions/python/requirements-peers.txt.
	pyPeers = "bench/.venv-peers/bin/python"
)

// sh runs a command line through sh -c with exec, so that $PORT and $WORKERS reach a
// server's own flags and the server is the process started (pinned, frozen, stopped).
func sh(line string) []string { return []string{"sh", "-c", "exec " + line} }

// javaWorkerFlags start a long-lived JVM as java/README.md recommends for a worker (the
// serial collector with a small young generation: short, rare pauses).
var javaWorkerFlags = []string{"java", "-XX:+UseSerialGC", "-Xmn32m"}

// Languages are the four languages the benchmarks know, in report order.
func Languages(root string) []Language {
	py := "python/.venv/bin/python"
	javaRuntime := readClasspath(root, "bench/build/java-runtime.classpath")
	javaPeers := javaPeerClasses + ":" + readClasspath(root, javaPeerClasspath)
	javaPeer := func(class string) []string {
		return append(slices.Clone(javaWorkerFlags), "-cp", javaPeers, class)
	}
	pyApps := "PYTHONPATH=bench/functions/python" // asgi_app.py and wsgi_app.py
	const pyStdlibOnly = "AFTERBURN_PY_ACCEL=off" // python/src/afterburn_runtime/_accel.py
	return []Language{
		{
			Name:      "go",
			AfterBurn: []string{"bench/bin/go-afterburn"},
			Classic:   []string{"bench/bin/go-classic"},
			Server:    []string{"bench/bin/go-server"},
			NoLib:     []string{"bench/bin/limit-child"},
			IO:        []string{"bench/bin/go-io"},
			Built:     []string{"bench/bin/go-afterburn", "bench/bin/go-classic", "bench/bin/go-server", "bench/bin/limit-child", "bench/bin/go-io"},
			// The proxy column's server is the peer; alone it is the ceiling configuration.
			Peers: []Peer{{Key: "net-http", VersionOf: "bench/bin/go-server", Own: true, AloneKey: string(Ceiling),
				Setup: "http.Serve, a goroutine per connection (functions/go/server)"}},
		},
		{
			Name:      "python",
			AfterBurn: []string{py, "bench/functions/python/afterburn_fn.py"},
			Classic:   []string{py, "bench/functions/python/classic.py"},
			Server:    []string{py, "bench/functions/python/server.py"},
			NoLib:     []string{py, "bench/functions/python/nolib.py"},
			IO:        []string{py, "bench/functions/python/io_fn.py"},
			Built: []string{py, pyPeers, "bench/.venv-peers/bin/uvicorn", "bench/.venv-peers/bin/gunicorn",
				"bench/functions/python/asgi_app.py", "bench/functions/python/wsgi_app.py"},
			Peers: []Peer{
				{Key: "http.server", Version: []string{py, "bench/functions/python/peer_version.py", "http.server"}, Own: true, Stdlib: true,
					Setup: "http.server's ThreadingHTTPServer, a thread per connection, Nagle off (functions/python/server.py)"},
				{Key: "uvicorn", Version: []string{pyPeers, "bench/functions/python/peer_version.py", "uvicorn", "httptools", "uvloop"},
					Server: sh(`bench/.venv-peers/bin/uvicorn --host 127.0.0.1 --port "$PORT" --loop uvloop --http httptools ` +
						`--no-access-log --log-level warning --app-dir bench/functions/python asgi_app:app`),
					Setup: "one process (uvicorn's default), --loop uvloop --http httptools, no access log, serving asgi_app:app"},
				{Key: "gunicorn", Version: []string{pyPeers, "bench/functions/python/peer_version.py", "gunicorn"},
					Server: sh(`bench/.venv-peers/bin/gunicorn --bind "127.0.0.1:$PORT" --worker-class sync --workers "$WORKERS" ` +
						`--log-level warning --chdir bench/functions/python wsgi_app:app`),
					Setup: "--worker-class sync, --workers as many as the watchdog's (-workers), serving wsgi_app:app; " +
						"a sync worker closes the connection after every response"},
			},
			// The ASGI adapter is judged as the plain handler is (issue 30); the same two with
			// the standard library alone (AFTERBURN_PY_ACCEL=off: no uvloop even where the
			// default would take it) against the same peer with its accelerators, to ≥ 1.0.
			Variants: []Variant{
				{Key: "asgi", Worker: []string{py, "-m", "afterburn_runtime", "--asgi", "asgi_app:app"}, Env: []string{pyApps},
					Setup: "python -m afterburn_runtime --asgi asgi_app:app", Label: "asgi adapter", SameAppAs: "uvicorn",
					Headline: true, CPUGoal: 40},
				{Key: "stdlib", Worker: []string{py, "bench/functions/python/afterburn_fn.py"}, Env: []string{pyStdlibOnly},
					Setup: "plain handler, " + pyStdlibOnly, Label: "plain handler, standard library only,",
					Headline: true, Goal: StdlibPeerGoal},
				{Key: "asgi-stdlib", Worker: []string{py, "-m", "afterburn_runtime", "--asgi", "asgi_app:app"},
					Env: []string{pyApps, pyStdlibOnly}, Setup: "python -m afterburn_runtime --asgi asgi_app:app, " + pyStdlibOnly,
					Label: "asgi adapter, standard library only,", SameAppAs: "uvicorn", Headline: true, Goal: StdlibPeerGoal},
				{Key: "wsgi", Worker: []string{py, "-m", "afterburn_runtime", "--wsgi", "wsgi_app:app"}, Env: []string{pyApps},
					Setup: "python -m afterburn_runtime --wsgi wsgi_app:app", Label: "wsgi adapter", SameAppAs: "gunicorn"},
			},
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
			Peers: []Peer{{Key: "http", Version: []string{"node", "-p", `"node:http (Node " + process.version + ")"`}, Own: true,
				Setup: "http.createServer, one process, keep-alive 60 s (functions/node/server.js)"}},
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
			IO: append(slices.Clone(javaWorkerFlags), "-cp", javaClasses+":"+javaRuntime, "IoFn"),
			Built: []string{javaClasses + "/AfterBurnFn.class", javaClasses + "/IoFn.class", "bench/build/java-runtime.classpath",
				javaPeerClasses + "/NettyServer.class", javaPeerClasses + "/UndertowServer.class", javaPeerClasspath},
			// Every peer's JVM gets the worker's flags, as the AfterBurn worker does.
			Peers: []Peer{
				{Key: "httpserver", Version: append(javaPeer("PeerVersion"), "jdk"), Own: true, Stdlib: true,
					Setup: "com.sun.net.httpserver, a fixed pool of a thread per CPU, nodelay (functions/java/Server.java)"},
				{Key: "netty", Version: append(javaPeer("PeerVersion"), "netty"), Server: javaPeer("NettyServer"),
					Setup: "HttpServerCodec + HttpObjectAggregator + one handler, NIO transport, Netty's default event loops (2 per CPU)"},
				{Key: "undertow", Version: append(javaPeer("PeerVersion"), "undertow"), Server: javaPeer("UndertowServer"),
					Setup: "undertow-core, one non-blocking handler on the I/O threads (Undertow's defaults)"},
			},
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
