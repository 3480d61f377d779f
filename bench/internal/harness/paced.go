package harness

import (
	"fmt"
	"io"
	"net/http"
	"slices"
	"time"
)

// pacedLoad sends GETs of workload w to url at rps requests per second for d, one at a time
// on one kept-alive connection (a request that takes longer than the interval delays the
// next), and reports the rate reached and the latencies. Unlike wrk, which sends the next
// request as soon as the last is answered, it leaves the server idle between requests: the
// isolation scenario's measure of a fresh process against a warm one when spares keep up.
func pacedLoad(url string, w Workload, rps float64, d time.Duration) (LoadResult, error) {
	if w == Model {
		url += "model"
	}
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1, DisableCompression: true}, Timeout: 10 * time.Second}
	defer client.CloseIdleConnections()
	interval := time.Duration(float64(time.Second) / rps)
	var lat []float64
	var r LoadResult
	start := time.Now()
	next := start
	for time.Since(start) < d {
		if wait := time.Until(next); wait > 0 {
			time.Sleep(wait)
		}
		next = next.Add(interval)
		t := time.Now()
		resp, err := client.Get(url)
		if err != nil {
			r.Errors++
			continue
		}
		_, err = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK {
			r.Errors++
			continue
		}
		lat = append(lat, float64(time.Since(t).Microseconds()))
	}
	if len(lat) == 0 {
		return r, fmt.Errorf("paced load of %s: no request answered (%d errors)", url, r.Errors)
	}
	slices.Sort(lat)
	r.Requests = int64(len(lat))
	r.RPS = float64(len(lat)) / time.Since(start).Seconds()
	r.P50us = lat[len(lat)/2]
	r.P99us = lat[min(len(lat)-1, len(lat)*99/100)]
	return r, nil
}
