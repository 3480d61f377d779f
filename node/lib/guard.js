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
//   - rules 13 and 14: AfterBurn-Timeout-Ms and AfterBurn-Exchange are ours;
//   - §9.4: at EOF, whether it fell between two requests or inside one.
//
// The FrameGuard sees every byte before llhttp does and follows the message structure
// (head lines, Content-Length or chunked body, trailers) just far enough to apply those
// rules. It is sans-IO: write() takes bytes and says how many of them may go on to llhttp
// and, on a violation, the error. It never rewrites bytes: what passes is what arrived.
//
// It checks, and nothing more. Where the parts of a message end, which it finds on the way,
// it tells the observer it was given, if any (framer.js, which marks them for the fetch
// core): a head followed by a Content-Length body, the bytes of that body, a message's end.
//
// The cores take a request's exchange token (§4.6) from llhttp's fields, not from here: the
// guard runs ahead of llhttp by whole requests. It keeps one itself only for the errors it
// finds at the end of a head (rules 10 and 12), which llhttp never sees complete, so their
// rejection can carry the token (§4.6: SHOULD, once the head was read). It makes that
// string only when it is needed: it notes where the value lies, and reads it when the head
// fails, or when a write ends inside that head and the bytes may be reused.

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

const DIGITS = /^[0-9]+$/;

// PROTOCOL.md §4.6: an exchange token is 1 to 64 characters of 0-9 a-z A-Z.
const TOKEN_MAX = 64;
const ALNUM = (() => {
  const t = new Uint8Array(256);
  for (const c of '0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ') t[c.charCodeAt(0)] = 1;
  return t;
})();

/**
 * Whether the field line at buf[start] begins with `lower` (a lower-case name of letters and '-'),
 * ignoring ASCII case (RFC 9110 §5.1). OR-ing 0x20 folds letters and keeps '-'; the only
 * other byte it maps to '-' is CR, which _line has already refused.
 */
function nameIs(buf, start, lower) {
  for (let i = 0; i < lower.length; i++) if ((buf[start + i] | 0x20) !== lower.charCodeAt(i)) return false;
  return true;
}

// Byte searches are plain loops, not Buffer#indexOf: the lines of a head are short, and a
// call into C++ per line and per check costs more than the scan itself, most of all in a
// worker that wakes for each request with its caches cold (a head passed here some 20 such
// calls before).

/**
 * buf[from, to) as a latin1 string. The guard takes any Uint8Array (child.js passes plain
 * views of its read buffer), so Buffer's own toString may not be there.
 */
function latin1(buf, from, to) {
  return Buffer.from(buf.buffer, buf.byteOffset + from, to - from).toString('latin1');
}

/** The offset of the first `byte` in buf[from, to), or -1. */
function indexOfByte(buf, byte, from, to) {
  for (let i = from; i < to; i++) if (buf[i] === byte) return i;
  return -1;
}

function allDigits(buf, from, to) {
  for (let i = from; i < to; i++) if (buf[i] < 0x30 || buf[i] > 0x39) return false;
  return true;
}

function allAlnum(buf, from, to) {
  for (let i = from; i < to; i++) if (!ALNUM[buf[i]]) return false;
  return true;
}

/** The value of 1 to 15 ASCII digits in buf[from, to), or -1 for anything else. */
function digitsValue(buf, from, to) {
  if (from === to || to - from > 15) return -1;
  let n = 0;
  for (let i = from; i < to; i++) {
    const d = buf[i] - 0x30;
    if (d < 0 || d > 9) return -1;
    n = n * 10 + d;
  }
  return n;
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
   * @param {{onHead(at: number): void, onBody(at: number, last: boolean): void,
   *   onMessageEnd(at: number): void} | null} [parts] told, with offsets in write()'s
   *   chunk, where a head that a Content-Length body follows ends, where the bytes of that
   *   body passed so far end (last: the body's own end), and where a message ends
   */
  constructor(limits, parts = null) {
    this.parts = parts;
    this.maxHead = limits.maxHead;
    this.maxBody = limits.maxBody;
    this.state = State.REQUEST_LINE;
    this.partial = []; // the pieces of a line that spans several writes
    this.partialLength = 0;
    this.failed = null;
    this.messages = 0; // heads completed: the index of the next message to dispatch
    this.at = 0; // the offset in write()'s chunk just after the line or body being read
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
    // Rule 14 and the token of this head (see the top): where its value lies, until the
    // head ends or the bytes may go; the value itself once read; whether one was seen.
    this.tokenBuf = null;
    this.tokenFrom = 0;
    this.tokenTo = 0;
    this.token = null;
    this.tokenSeen = false;
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
   * Follows `chunk` (any Uint8Array) through the message structure, telling the parts
   * observer, if any, where they end.
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
        if (s === State.BODY) {
          if (this.parts !== null) this.parts.onBody(i, this.remaining === 0);
          if (this.remaining === 0) {
            this.state = State.REQUEST_LINE;
            this._resetMessage();
          }
        } else if (this.remaining === 0) {
          this.state = State.CHUNK_DATA_CRLF;
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
      const lf = indexOfByte(chunk, LF, i, n);
      if (lf < 0) {
        this.partial.push(chunk.subarray(i));
        this.partialLength += n - i;
        const err = this._checkPartialLine();
        if (err) return this._fail(n, err);
        if (this.tokenBuf !== null) this._readToken();
        return { pass: n, error: null };
      }
      let err;
      if (this.partialLength > 0) {
        this.partial.push(chunk.subarray(i, lf + 1));
        const line = Buffer.concat(this.partial);
        this.partial = [];
        this.partialLength = 0;
        this.at = lf + 1;
        err = this._line(line, 0, line.length);
      } else {
        // A line whole in this chunk is read in place, without a copy or a view of it.
        this.at = lf + 1;
        err = this._line(chunk, i, lf + 1);
      }
      i = lf + 1;
      if (err) {
        // The line is refused before its LF reaches the parser, so a bad head never
        // completes there and no handler sees it.
        return this._fail(lf, err);
      }
    }
    if (this.tokenBuf !== null) this._readToken();
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

  /** One complete line, LF included: buf[start, end). */
  _line(buf, start, end) {
    const len = end - start;
    if (len < 2 || buf[end - 2] !== CR) return badRequest('a line ends in a bare LF'); // rule 1
    if (indexOfByte(buf, CR, start, end - 2) >= 0) return badRequest('a bare CR inside a line'); // rules 1, 5
    switch (this.state) {
      case State.REQUEST_LINE:
        this.headBytes = len;
        if (len > this.maxHead) return headersTooLarge(this.maxHead);
        this.state = State.FIELD_LINE;
        return checkRequestLine(buf, start, end - 2);
      case State.FIELD_LINE:
        if (len === 2) return this._endHead();
        this.headBytes += len;
        if (this.headBytes > this.maxHead) return headersTooLarge(this.maxHead); // rule 11
        return this._field(buf, start, end - 2);
      case State.CHUNK_SIZE:
        return this._chunkSize(latin1(buf, start, end - 2));
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

  // Rules 6, 7, 8, 10 and 13, as each field line arrives: buf[start, end), CRLF excluded.
  // Token and value characters (rules 3 to 5) are llhttp's to check. Only the four names
  // that matter are looked at, from the bytes; a string is made only for an error.
  _field(buf, start, end) {
    const colon = indexOfByte(buf, 0x3a, start, end);
    if (colon <= start) return badRequest('a field line without a name or colon'); // rule 3
    // The value, optional whitespace trimmed: buf[from, to).
    let from = colon + 1;
    let to = end;
    while (from < to && (buf[from] === 0x20 || buf[from] === 0x09)) from++;
    while (to > from && (buf[to - 1] === 0x20 || buf[to - 1] === 0x09)) to--;
    switch (colon - start) {
      case 4:
        if (!nameIs(buf, start, 'host')) return null;
        if (++this.hosts > 1) return badRequest('more than one Host field'); // rule 10
        return null;
      case 14: {
        if (!nameIs(buf, start, 'content-length')) return null;
        if (this.contentLength >= 0) return badRequest('more than one Content-Length field'); // rule 6
        if (this.chunked) return badRequest('both Content-Length and Transfer-Encoding'); // rule 7
        let n = digitsValue(buf, from, to);
        if (n < 0) {
          const v = latin1(buf, from, to);
          n = parseContentLength(v);
          if (n < 0) return badRequest(`Content-Length ${JSON.stringify(v)}`); // rule 6
        }
        this.contentLength = n;
        return null;
      }
      case 17: {
        if (!nameIs(buf, start, 'transfer-encoding')) return null;
        if (this.contentLength >= 0) return badRequest('both Content-Length and Transfer-Encoding'); // rule 7
        // Rule 8: exactly "chunked"; a second line makes the list "chunked, ...".
        const v = latin1(buf, from, to);
        if (this.chunked) return notImplemented(`chunked, ${v}`);
        if (v.toLowerCase() !== 'chunked') return notImplemented(v);
        this.chunked = true;
        return null;
      }
      case 18: {
        if (!nameIs(buf, start, 'afterburn-exchange')) return null;
        // Rule 14 (§4.6): one field, 1 to 64 characters of 0-9 a-z A-Z.
        if (this.tokenSeen) return badRequest('more than one AfterBurn-Exchange field');
        if (to - from > TOKEN_MAX || from === to || !allAlnum(buf, from, to)) {
          return badRequest(`AfterBurn-Exchange ${JSON.stringify(latin1(buf, from, to))}`);
        }
        this.tokenSeen = true;
        this.tokenBuf = buf;
        this.tokenFrom = from;
        this.tokenTo = to;
        return null;
      }
      case 20: {
        if (!nameIs(buf, start, 'afterburn-timeout-ms')) return null;
        if (from === to || !allDigits(buf, from, to)) {
          return badRequest(`AfterBurn-Timeout-Ms ${JSON.stringify(latin1(buf, from, to))}`); // rule 13
        }
        return null;
      }
      default:
        return null;
    }
  }

  _endHead() {
    if (this.hosts === 0) return this._headError(badRequest('no Host field')); // rule 10
    if (this.maxBody > 0 && this.contentLength > this.maxBody) {
      return this._headError(bodyTooLarge(this.maxBody)); // rule 12, before any body byte
    }
    this.tokenBuf = null; // the core reads it from llhttp's fields from here on
    this.messages++;
    if (this.chunked) {
      this.state = State.CHUNK_SIZE;
    } else if (this.contentLength > 0) {
      this.remaining = this.contentLength;
      this.state = State.BODY;
      if (this.parts !== null) this.parts.onHead(this.at); // the head, before its body
    } else {
      this._endMessage(); // §4.2: neither field means an empty body
    }
    return null;
  }

  // An error found once the whole head was read: its rejection carries the head's token
  // (§4.6), which no exchange of the core holds, since llhttp never sees this head end.
  _headError(error) {
    if (this.tokenBuf !== null) this._readToken();
    error.exchange = this.token;
    return error;
  }

  // The token's value as a string, while the bytes it lies in are still the head's.
  _readToken() {
    this.token = latin1(this.tokenBuf, this.tokenFrom, this.tokenTo);
    this.tokenBuf = null;
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
    if (this.parts !== null) this.parts.onMessageEnd(this.at);
    this.state = State.REQUEST_LINE;
    this._resetMessage();
  }
}

// Rule 2: token SP request-target SP HTTP/1.1 (or HTTP/1.0), single spaces, and §4.2's
// origin-form (the asterisk-form only for OPTIONS; the absolute-form as RFC 9112 §3.2.2
// asks every server to accept it). Read from the bytes: no string is made for the
// common origin-form line.
const HTTP_1_ = [0x48, 0x54, 0x54, 0x50, 0x2f, 0x31, 0x2e]; // "HTTP/1."

function checkRequestLine(line, start, end) {
  const sp1 = indexOfByte(line, 0x20, start, end);
  const sp2 = sp1 < 0 ? -1 : indexOfByte(line, 0x20, sp1 + 1, end);
  if (sp2 < 0 || indexOfByte(line, 0x20, sp2 + 1, end) >= 0) {
    return badRequest('a request line that is not three single-space-separated parts');
  }
  if (sp1 === start) return badRequest('a method that is not a token');
  for (let i = start; i < sp1; i++) if (!TCHAR[line[i]]) return badRequest('a method that is not a token');
  if (end - sp2 - 1 !== 8 || (line[sp2 + 8] !== 0x31 && line[sp2 + 8] !== 0x30)) {
    return badRequest('a version other than HTTP/1.1');
  }
  for (let i = 0; i < 7; i++) if (line[sp2 + 1 + i] !== HTTP_1_[i]) return badRequest('a version other than HTTP/1.1');
  if (sp2 === sp1 + 1) return badRequest('an empty request-target');
  for (let i = sp1 + 1; i < sp2; i++) {
    const c = line[i];
    if (c < 0x21 || c === 0x7f) return badRequest('a control character in the request-target');
  }
  if (line[sp1 + 1] === 0x2f) return null; // '/': origin-form
  const target = latin1(line, sp1 + 1, sp2);
  if (target === '*') return latin1(line, start, sp1) === 'OPTIONS' ? null : badRequest('an asterisk-form target outside OPTIONS');
  if (/^[A-Za-z][A-Za-z0-9+.-]*:\/\//.test(target)) return null;
  return badRequest('a request-target that is not in origin-form');
}

module.exports = { FrameGuard };
