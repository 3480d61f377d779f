package watchdog

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/afterburn-dev/afterburn/go/internal/watchdog/config"
	"github.com/afterburn-dev/afterburn/go/internal/watchdog/internal/testworker"
	"github.com/afterburn-dev/afterburn/go/internal/watchdog/wire"
)

// PROTOCOL.md §4.6: a whole response written late by user code lands while
// the next request is served. It must never reach that request's client.
func TestExchangeTokenStaleResponseNeverDelivered(t *testing.T) {
	for _, tc := range []struct {
		name, arm, next string
	}{
		// The stale response arrives once the next request was read: no
		// token at all.
		{"missing token", "/stale-on-next", "/sleep?ms=1"},
		// The response carries the right token and another one.
		{"two tokens", "", "/wrong-token"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := start(t, nil, "AFTERBURN_TEST_TOKENS=1")
			if tc.arm != "" {
				resp, body := h.Get(tc.arm)
				wantBody(t, resp, body, 200, "armed")
			}
			resp, body := h.Get(tc.next)
			wantError(t, resp, body, http.StatusBadGateway, wire.ErrBadResponse)
			h.logs.waitContains(t, "with a response that is not its own")
			h.logs.waitContains(t, "replaced: bad_response")
			if got := counter(t, h.wd.m.ProtocolErrors, "exchange"); got != 1 {
				t.Errorf("protocol errors {kind=exchange} = %v; want 1", got)
			}
			resp, body = h.Get("/next")
			wantBody(t, resp, body, 200, "ok GET /next")
		})
	}
}

// Without the token the same late writer's bytes are taken for the next
// answer: this is what §4.6 fixes, and why a library without the capability
// gets no token (it would not echo it).
func TestNoTokenForLibraryWithoutCapability(t *testing.T) {
	h := start(t, nil)
	_, body := h.Get("/headers")
	var seen testworker.Seen
	if err := json.Unmarshal([]byte(body), &seen); err != nil {
		t.Fatal(err)
	}
	if v, ok := seen.Header["Afterburn-Exchange"]; ok {
		t.Fatalf("a worker without the exchange capability got AfterBurn-Exchange %q", v)
	}
}

// PROTOCOL.md §4.6: every request to a worker listing the capability
// carries a token of its own, and the client never sees it.
func TestTokensUniquePerExchange(t *testing.T) {
	h := start(t, nil, "AFTERBURN_TEST_TOKENS=1")
	seenTokens := map[string]bool{}
	for i := 0; i < 5; i++ {
		resp, body := h.Get("/headers")
		if v := resp.Header.Values("AfterBurn-Exchange"); len(v) != 0 {
			t.Fatalf("the client got AfterBurn-Exchange %q", v)
		}
		var seen testworker.Seen
		if err := json.Unmarshal([]byte(body), &seen); err != nil {
			t.Fatal(err)
		}
		v := seen.Header["Afterburn-Exchange"]
		if len(v) != 1 || v[0] == "" || seenTokens[v[0]] {
			t.Fatalf("request %d carried AfterBurn-Exchange %q; want one token not seen before (seen %v)", i, v, seenTokens)
		}
		seenTokens[v[0]] = true
	}
}

// PROTOCOL.md §3.5, §4.6: a repeated handshake carries a token; a reply
// with another one fails the liveness check.
func TestRepeatedHandshakeToken(t *testing.T) {
	h := start(t, func(c *config.Config) { c.HealthcheckInterval = 20e6 }, "AFTERBURN_TEST_TOKENS=1",
		"AFTERBURN_TEST_INIT=wrong-token-on-repeat")
	h.logs.waitContains(t, "failed its liveness handshake: handshake reply carries AfterBurn-Exchange")
	h.logs.waitContains(t, "replaced: unresponsive")
}

func TestListsCapability(t *testing.T) {
	for _, tc := range []struct {
		values []string
		want   bool
	}{
		{nil, false},
		{[]string{""}, false},
		{[]string{"exchange"}, true},
		{[]string{"streams, exchange"}, true},
		{[]string{"streams", " exchange "}, true},
		{[]string{"exchanges"}, false},
		{[]string{"fork,streams"}, false},
	} {
		if got := wire.ListsCapability(tc.values, "exchange"); got != tc.want {
			t.Errorf("listsCapability(%q) = %v; want %v", tc.values, got, tc.want)
		}
	}
}
