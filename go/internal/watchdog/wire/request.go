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
	// net/http moves a chunked request's Trailer field out of r.Header
	// into r.Trailer's keys: counted as the one field that names them all,
	// as the exchange writes it to the worker (§6.7), so that a head within
	// max_header_bytes stays within the library's limit (§7.3). A name
	// the client repeated counts once.
	if len(r.Trailer) > 0 && r.Header["Trailer"] == nil {
		n += len("Trailer: ")
		for k := range r.Trailer {
			n += len(k) + len(", ") // the last name's ", " stands for CRLF
		}
	}
	return n
}
