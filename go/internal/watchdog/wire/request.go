package wire

import (
	"net/http"
)

// HeadSize is the size of the client's request line and field lines with
// their CRLFs (PROTOCOL.md §7.1), as net/http parsed them.
func HeadSize(r *http.Request) int {
	n := len(r.Method) + 1 + len(r.RequestURI) + 1 + len(r.Proto) + 2
	if r.Host != "" {
		n += len("Host: ") + len(r.Host) + 2
	}
	for k, vv := range r.Header {
		for _, v := range vv {
			n += len(k) + 2 + len(v) + 2
		}
	}
	for _, te := range r.TransferEncoding {
		n += len("Transfer-Encoding: ") + len(te) + 2
	}
	return n
}
