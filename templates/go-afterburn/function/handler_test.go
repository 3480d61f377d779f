package function

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestHandle runs during the image build (go test): a failure stops the build. Handle is
// an ordinary net/http handler, so net/http/httptest calls it in-process.
func TestHandle(t *testing.T) {
	for _, tc := range []struct {
		name, method, target, contentType, body string
		wantBody, wantType                      string
	}{
		{"get by name", "GET", "/?name=Ada", "", "", "Hello, Ada!\n", "text/plain; charset=utf-8"},
		{"get without name", "GET", "/", "", "", "Hello, world!\n", "text/plain; charset=utf-8"},
		{"post echoes", "POST", "/", "application/json", `{"n":1}`, `{"n":1}`, "application/json"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := httptest.NewRequest(tc.method, tc.target, strings.NewReader(tc.body))
			if tc.contentType != "" {
				req.Header.Set("Content-Type", tc.contentType)
			}
			rec := httptest.NewRecorder()
			Handle(rec, req)
			if rec.Code != http.StatusOK || rec.Body.String() != tc.wantBody {
				t.Errorf("%s %s: got %d %q; want 200 %q", tc.method, tc.target, rec.Code, rec.Body.String(), tc.wantBody)
			}
			if got := rec.Header().Get("Content-Type"); got != tc.wantType {
				t.Errorf("%s %s: Content-Type %q; want %q", tc.method, tc.target, got, tc.wantType)
			}
		})
	}
}
