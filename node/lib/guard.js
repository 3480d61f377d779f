'use strict';

// Theory of operation.
//
// llhttp (Node's HTTP parser, driven by http.Server in connection.js) parses every request
// and frames every response. It is strict by default, but a few rules of PROTOCOL.md §4.3
// are stricter still, and some limits must be counted in bytes as they arrive:
//
//   - rule 2: llhttp accepts `GET  /x` (two spaces) and `GET /x` (HTTP/0.9);
//   - rule 6: llhttp takes Content-Length up to 2^64-1, the spec only 63 bits;
//   - rule 8: llhttp accepts `Transfer-Encoding: gzip, chunked`;
//   - rule 9: llhttp accepts chunk sizes of more than 16 hex digits, and counts the
//     trailer section against maxHeaderSize with a count of its own (see rule 11);
//   - rule 10: llhttp (through http.Server) only knows "Host required", not "exactly one";
//   - rule 11: Node counts only the request-target, field names and values, not the
//     spaces, colons and CRLFs, so its limit is not the spec's byte count;
//   - rule 12: Node has no body limit at all;
//   - rule 13: AfterBurn-Timeout-Ms is ours;
//   - §9.4: at EOF, whether it fell between two requests or inside one.
//
// The FrameGuard sees every byte before llhttp does and follows the message structure
// (head lines, Content-Length or chunked body, trailers) just far enough to apply those
// rules. It is sans-IO: write() takes bytes and says how many of them may go on to llhttp
// and, on a violation, the error. It never rewrites bytes: what passes is what arrived.

const { badRequest, headersTooLarge, bodyTooLarge, notImplemented } = require('./errors');

const LF = 0x0a;
const CR = 0x0d;

const State = Object.freeze({
  REQUEST_LINE: 0,
  FIELD_LINE: 1,
  BODY: 2, // Content-Length
  CHUNK_SIZE: 3,
  CHUNK_DATA: 4,
  CHUNK_DATA_CRLF: 5,
  TRAILER_LINE: 6,
});

// RFC 9110 §5.6.2 tchar.
const TCHAR = (() => {
  const t = new Uint8Array(256);
  for (const c of "!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ") {
    t[c.charCodeAt(0)] = 1;
  }
  return t;
})();

function isToken(s) {
  if (s.length === 0) return false;
  for (let i = 0; i < s.length; i++) if (!TCHAR[s.charCodeAt(i)]) return false;
  return true;
}

const DIGITS = /^[0-9]+$/;
const TRIM_OWS = /^[ \t]+|[ \t]+$/g;

/**
 * Whether the field line starts with `lower` (a lower-case name of letters and '-'),
 * ignoring ASCII case (RFC 9110 §5.1). OR-ing 0x20 folds letters and keeps '-'; the only
 * other byte it maps to '-' is CR, which _line has already refused.
 */
function nameIs(line, lower) {
  for (let i = 0; i < lower.length; i++) if ((line[i] | 0x20) !== lower.charCodeAt(i)) return false;
  return true;
}
const MAX_INT63 = '9223372036854775807';

/** Rule 6: one or more ASCII digits that fit in 63 bits. Returns the value, or -1. */
function parseContentLength(value) {
  if (!DIGITS.test(value)) return -1;
  const digits = value.replace(/^0+(?=.)/, '');
  if (digits.length > MAX_INT63.length || (digits.length === MAX_INT63.length && digits > MAX_INT63)) {
    return -1;
  }
  return Number(digits); // beyond 2^53 only the comparison with the body limit matters
}

class FrameGuard {
  /**
   * @param {{maxHead: number, maxBody: number}} limits PROTOCOL.md §7.3: maxHead already
   *   includes the 1024 bytes of slack; maxBody 0 means unlimited.
   */
  constructor(limits) {
    this.maxHead = limits.maxHead;
    this.maxBody = limits.maxBody;
    this.state = State.REQUEST_LINE;
    this.partial = []; // the pieces of a line that spans several writes
    this.partialLength = 0;
    this.failed = null;
    this.messages = 0; // heads completed: the index of the next message to dispatch
    this._resetMessage();
  }

  _resetMessage() {
    this.headBytes = 0; // request line and field lines with their CRLFs (rule 11)
    this.hosts = 0;
    this.contentLength = -1;
    this.chunked = false;
    this.remaining = 0; // body or chunk bytes still to come
    this.bodyBytes = 0; // de-chunked body bytes so far (rule 12)
    this.trailerBytes = 0;
    this.crlfSeen = 0;
  }

  /** True between two messages: EOF here is a clean end of the stream (§9.4). */
  get atBoundary() {
    return this.state === State.REQUEST_LINE && this.partialLength === 0;
  }

  /** True while the trailer section of a chunked body is being read. */
  get inTrailers() {
    return this.state === State.TRAILER_LINE;
  }

  /**
   * Follows `chunk` through the message structure.
   * @returns {{pass: number, error: import('./errors').ProtocolError | null}} how many
   *   leading bytes of chunk are sound and may go on to the parser, and the violation
   *   found right after them, if any. After an error the guard refuses everything.
   */
  write(chunk) {
    if (this.failed) return { pass: 0, error: this.failed };
    let i = 0;
    const n = chunk.length;
    while (i < n) {
      const s = this.state;
      if (s === State.BODY || s === State.CHUNK_DATA) {
        const take = Math.min(this.remaining, n - i);
        this.remaining -= take;
        i += take;
        if (this.remaining === 0) {
          if (s === State.BODY) this._endMessage();
          else this.state = State.CHUNK_DATA_CRLF;
        }
        continue;
      }
      if (s === State.CHUNK_DATA_CRLF) {
        // Rule 9: chunk data is followed by exactly CRLF.
        const want = this.crlfSeen === 0 ? CR : LF;
        if (chunk[i] !== want) return this._fail(i, badRequest('chunk data not followed by CRLF'));
        i++;
        if (++this.crlfSeen === 2) {
          this.crlfSeen = 0;
          this.state = State.CHUNK_SIZE;
        }
        continue;
      }
      // A line-oriented state.
      const lf = chunk.indexOf(LF, i);
      if (lf < 0) {
        this.partial.push(chunk.subarray(i));
        this.partialLength += n - i;
        const err = this._checkPartialLine();
        if (err) return this._fail(n, err);
        return { pass: n, error: null };
      }
      let line;
      if (this.partialLength > 0) {
        this.partial.push(chunk.subarray(i, lf + 1));
        line = Buffer.concat(this.partial);
        this.partial = [];
        this.partialLength = 0;
      } else {
        line = chunk.subarray(i, lf + 1);
      }
      i = lf + 1;
      const err = this._line(line);
      if (err) {
        // The line is refused before its LF reaches the parser, so a bad head never
        // completes there and no handler sees it.
        return this._fail(lf, err);
      }
    }
    return { pass: n, error: null };
  }

  /**
   * The request stream ended. Returns null between messages (a clean end, §9.4), else
   * the framing error of an EOF inside a request.
   */
  end() {
    if (this.failed) return this.failed;
    if (this.atBoundary) return null;
    return this._fail(0, badRequest('end of the request pipe inside a request')).error;
  }

  _fail(pass, error) {
    this.failed = error;
    return { pass, error };
  }

  // Limits are enforced as bytes arrive (§4.3): a line still without its LF is refused
  // as soon as it can no longer fit.
  _checkPartialLine() {
    const len = this.partialLength;
    switch (this.state) {
      case State.REQUEST_LINE:
      case State.FIELD_LINE:
        // The LF is still to come, so the line is at least len + 1 bytes; a partial
        // line of 2 or more bytes is not the empty line that ends the head.
        if (len >= 2 && this.headBytes + len + 1 > this.maxHead) return headersTooLarge(this.maxHead);
        return null;
      case State.TRAILER_LINE:
        if (len >= 2 && this.trailerBytes + len + 1 > this.maxHead) {
          return badRequest('a trailer section larger than the header limit'); // rule 9
        }
        return null;
      case State.CHUNK_SIZE:
        if (len > this.maxHead) return badRequest('a chunk-size line longer than the header limit');
        return null;
      default:
        return null;
    }
  }

  /** One complete line, LF included. */
  _line(line) {
    const len = line.length;
    if (len < 2 || line[len - 2] !== CR) return badRequest('a line ends in a bare LF'); // rule 1
    if (line.indexOf(CR) !== len - 2) return badRequest('a bare CR inside a line'); // rules 1, 5
    switch (this.state) {
      case State.REQUEST_LINE:
        this.headBytes = len;
        if (len > this.maxHead) return headersTooLarge(this.maxHead);
        this.state = State.FIELD_LINE;
        return checkRequestLine(line.toString('latin1', 0, len - 2));
      case State.FIELD_LINE:
        if (len === 2) return this._endHead();
        this.headBytes += len;
        if (this.headBytes > this.maxHead) return headersTooLarge(this.maxHead); // rule 11
        return this._field(line, len - 2);
      case State.CHUNK_SIZE:
        return this._chunkSize(line.toString('latin1', 0, len - 2));
      case State.TRAILER_LINE:
        if (len === 2) {
          this._endMessage();
          return null;
        }
        this.trailerBytes += len;
        if (this.trailerBytes > this.maxHead) return badRequest('a trailer section larger than the header limit');
        return null;
      default:
        throw new Error(`afterburn: FrameGuard in state ${this.state} has no lines`);
    }
  }

  // Rules 6, 7, 8, 10 and 13, as each field line arrives. Token and value characters
  // (rules 3 to 5) are llhttp's to check. Only the four names that matter are decoded.
  _field(line, end) {
    const colon = line.indexOf(0x3a);
    if (colon <= 0 || colon > end) return badRequest('a field line without a name or colon'); // rule 3
    const value = () => line.toString('latin1', colon + 1, end).replace(TRIM_OWS, '');
    switch (colon) {
      case 4:
        if (!nameIs(line, 'host')) return null;
        if (++this.hosts > 1) return badRequest('more than one Host field'); // rule 10
        return null;
      case 14: {
        if (!nameIs(line, 'content-length')) return null;
        if (this.contentLength >= 0) return badRequest('more than one Content-Length field'); // rule 6
        if (this.chunked) return badRequest('both Content-Length and Transfer-Encoding'); // rule 7
        const v = value();
        const n = parseContentLength(v);
        if (n < 0) return badRequest(`Content-Length ${JSON.stringify(v)}`); // rule 6
        this.contentLength = n;
        return null;
      }
      case 17: {
        if (!nameIs(line, 'transfer-encoding')) return null;
        if (this.contentLength >= 0) return badRequest('both Content-Length and Transfer-Encoding'); // rule 7
        // Rule 8: exactly "chunked"; a second line makes the list "chunked, ...".
        const v = value();
        if (this.chunked) return notImplemented(`chunked, ${v}`);
        if (v.toLowerCase() !== 'chunked') return notImplemented(v);
        this.chunked = true;
        return null;
      }
      case 20: {
        if (!nameIs(line, 'afterburn-timeout-ms')) return null;
        const v = value();
        if (!DIGITS.test(v)) return badRequest(`AfterBurn-Timeout-Ms ${JSON.stringify(v)}`); // rule 13
        return null;
      }
      default:
        return null;
    }
  }

  _endHead() {
    if (this.hosts === 0) return badRequest('no Host field'); // rule 10
    if (this.maxBody > 0 && this.contentLength > this.maxBody) {
      return bodyTooLarge(this.maxBody); // rule 12, before any body byte
    }
    this.messages++;
    if (this.chunked) {
      this.state = State.CHUNK_SIZE;
    } else if (this.contentLength > 0) {
      this.remaining = this.contentLength;
      this.state = State.BODY;
    } else {
      this._endMessage(); // §4.2: neither field means an empty body
    }
    return null;
  }

  // Rule 9: 1 to 16 hex digits, then optional extensions, which are ignored.
  _chunkSize(text) {
    const m = /^([0-9A-Fa-f]{1,16})(?:[ \t]*;.*)?$/.exec(text);
    if (!m) return badRequest(`chunk size ${JSON.stringify(text.slice(0, 40))}`);
    const size = parseInt(m[1], 16);
    if (size === 0) {
      this.state = State.TRAILER_LINE;
      return null;
    }
    this.bodyBytes += size;
    if (this.maxBody > 0 && this.bodyBytes > this.maxBody) return bodyTooLarge(this.maxBody); // rule 12
    this.remaining = size;
    this.state = State.CHUNK_DATA;
    return null;
  }

  _endMessage() {
    this.state = State.REQUEST_LINE;
    this._resetMessage();
  }
}

// Rule 2: token SP request-target SP HTTP/1.1 (or HTTP/1.0), single spaces, and §4.2's
// origin-form (the asterisk-form only for OPTIONS; the absolute-form as RFC 9112 §3.2.2
// asks every server to accept it).
function checkRequestLine(text) {
  const parts = text.split(' ');
  if (parts.length !== 3) return badRequest('a request line that is not three single-space-separated parts');
  const [method, target, version] = parts;
  if (!isToken(method)) return badRequest('a method that is not a token');
  if (version !== 'HTTP/1.1' && version !== 'HTTP/1.0') return badRequest('a version other than HTTP/1.1');
  if (target.length === 0) return badRequest('an empty request-target');
  for (let i = 0; i < target.length; i++) {
    const c = target.charCodeAt(i);
    if (c < 0x21 || c === 0x7f) return badRequest('a control character in the request-target');
  }
  if (target[0] === '/') return null;
  if (target === '*') return method === 'OPTIONS' ? null : badRequest('an asterisk-form target outside OPTIONS');
  if (/^[A-Za-z][A-Za-z0-9+.-]*:\/\//.test(target)) return null;
  return badRequest('a request-target that is not in origin-form');
}

module.exports = { FrameGuard };
