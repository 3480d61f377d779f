// Command hello is a small AfterBurn function. It pays for an "expensive"
// initialisation once — a table of greetings built at start-up — and then answers
// every request from it, with the request id the watchdog assigned.
//
// Run it under the watchdog:
//
//	afterburn-watchdog -- go/bin/hello
//	curl 'localhost:8080/?name=Ada&lang=fr'
//
// With -lanes 8 each worker process answers up to 8 requests at once, one goroutine
// each (PROTOCOL.md §2.5); the table is only read after start-up, so the requests can
// share it without a lock.
package main

import (
	"fmt"
	"hash/fnv"
	"log"
	"net/http"
	"strings"
	"time"

	"github.com/afterburn-dev/afterburn/go/afterburn"
)

// greetings is built once per worker process, not once per request.
var greetings map[string][]string

// buildGreetings stands for the slow start-up of a real function: loading a model,
// parsing a dictionary, warming a cache.
func buildGreetings() map[string][]string {
	base := map[string]string{"en": "Hello", "fr": "Bonjour", "de": "Hallo", "es": "Hola", "it": "Ciao"}
	t := make(map[string][]string, len(base))
	for lang, word := range base {
		// A few variants per language, made the slow way on purpose.
		for i := range 4 {
			v := word + strings.Repeat("!", i)
			for range 50_000 {
				h := fnv.New64a()
				h.Write([]byte(v))
				_ = h.Sum64()
			}
			t[lang] = append(t[lang], v)
		}
	}
	return t
}

func hello(w http.ResponseWriter, r *http.Request) {
	name := r.URL.Query().Get("name")
	if name == "" {
		name = "world"
	}
	variants, ok := greetings[r.URL.Query().Get("lang")]
	if !ok {
		variants = greetings["en"]
	}
	h := fnv.New32a()
	h.Write([]byte(name))
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	fmt.Fprintf(w, "%s, %s (request %s)\n", variants[h.Sum32()%uint32(len(variants))], name, afterburn.RequestID(r))
}

func main() {
	start := time.Now()
	greetings = buildGreetings()
	// Logs go to stderr; even stdout would be safe (the protocol is not on it).
	log.Printf("hello: initialised %d languages in %v", len(greetings), time.Since(start).Round(time.Millisecond))

	// Serve answers the watchdog's handshake only now, so the worker is marked ready
	// once the table exists.
	if err := afterburn.Serve(http.HandlerFunc(hello)); err != nil {
		log.Fatal(err)
	}
}
