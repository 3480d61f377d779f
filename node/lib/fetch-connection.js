'use strict';

// Theory of operation.
//
// The core of a fetch-style worker: the same contract as connection.js (bytes in through
// push/end, bytes out through a synchronous sink, an exit status at the end), without
// http.Server, IncomingMessage and ServerResponse, which a handler that gets an undici
// Request and returns an undici Response never sees:
//
//   bytes in → FrameGuard (guard.js) → llhttp (Node's own parser, driven directly) → Request
//   Response → head and body serialized here → sink.write, sink.writeLatin1 (bytes out)
//
// The FrameGuard sees every byte first, applies the rules of §4.3 that llhttp lacks, and
// marks where each message ends. Bytes it passes wait in `backlog` and go to llhttp one
// message at a time: the next request is parsed only once the response to the one before
// it is complete (§2.1: one exchange at a time), so a stream that pipelines requests still
// gets its responses in order. llhttp's callbacks make the exchange: the head becomes the
// Request and the handler is called at once; body bytes go into the request's
// ReadableStream (made only for a request that has a body), whose back-pressure pauses the
// input; a body the handler leaves is dropped as it arrives (§6.3). A Content-Length body
// that came whole with its head (the watchdog writes a small one so, §6.1) goes to the
// Request as bytes, with no stream unless the handler asks for one (known-body.js).
// llhttp is done with a message at the end of its head when it reads no body of it (none,
// or a Content-Length one it is told to skip, whose end the guard marks); it says itself
// where a chunked body ends.
//
// Responses are written by this file, each head in one string: a body known at once (a
// string or bytes) is written with its head in one write and Content-Length; any other body
// is chunked, each chunk written as the handler's stream yields it (§6.1), unless the
// handler set a Content-Length itself, which is then held to. Responses to HEAD and every
// 204 and 304 have no body (§4.4). No Date field: the watchdog's clock is the one clients
// see. Every head is made by _head, which puts the request's AfterBurn-Exchange token right
// after the status line (§4.6); the handshake reply and the §8.1 errors written outside an
// answered exchange carry it too (protocol.js, errors.js).
//
// A framing error (§8.8), from the guard or from llhttp, stops the input; the §8.1 error
// response is written once the response owed to an earlier request is out, unless the
// failing request's own response has already started (its status is final then), and the
// connection stops with a non-zero status.

const { internalParser } = require('./http-parser');
const { FrameGuard, MARK_BODY, MARK_END } = require('./guard');
const { errorResponseBytes, errorBody, fromParserError } = require('./errors');
const { RequestContext, newRequestId } = require('./context');
const { DEFAULT_MAX_LANES, answerHandshake, handlerFailureRecord } = require('./protocol');
const { loadUndici, requestURL, makeRequest, readResponse, asBytes, nextTurn, InHandBody } = require('./fetch');
const { lastChunk } = require('./trailers');
const { STATUS_CODES } = require('node:http');
// The global `performance` is a lazy getter on Node 20: read it once here, not per request.
const { performance } = require('node:perf_hooks');

// Node's llhttp binding, from _http_common (lib/http-parser.js: this core is used only where
// that loads without a deprecation warning; lib/fetch-core.js picks the core).
const { HTTPParser, methods } = internalParser();
const { kOnMessageBegin, kOnHeaders, kOnHeadersComplete, kOnBody, kOnMessageComplete } = HTTPParser;

// Request body bytes queued for the handler before the input pauses.
const BODY_HIGH_WATER_MARK = 128 * 1024;
// A known body up to this size is copied behind its head, for one write; a larger one is
// written on its own right after the head.
const COALESCE_MAX = 64 * 1024;

const CRLF = Buffer.from('\r\n', 'latin1');
const LAST_CHUNK = Buffer.from('0\r\n\r\n', 'latin1');

class FetchConnection {
  /** lib/child.js may read into one buffer and push views of it (see retainsInput). */
  static readsInPlace = true;

  /**
   * @param {object} options the same as Connection's (connection.js), except:
   * @param {(request: Request, ctx: RequestContext) => unknown} options.handle the
   *   fetch-style handler
   * @param {{write(chunk: Buffer): boolean | void, writeLatin1?(text: string): boolean | void,
   *   end(code: number): void, drained?(): Promise<void> | null}} options.sink as
   *   Connection's, and writeLatin1, if there, writes a string of one byte per character as
   *   those bytes, as write does; drained, if there (a lane's writer), returns a promise
   *   while the writer holds more than it likes, which a streamed body waits on (§2.5)
   */
  constructor({ limits, handle, sink, log, pauseInput = () => {}, resumeInput = () => {},
    maxLanes = DEFAULT_MAX_LANES, inFlight = null, logFormat = 'text' }) {
    if (typeof handle !== 'function') throw new TypeError('afterburn: serve(handler) needs a function');
    this.maxLanes = maxLanes;
    this.logFormat = logFormat;
    this.inFlight = inFlight;
    loadUndici(); // at start-up, before the handshake: init is done before ready (§3.1)
    this.guard = new FrameGuard(limits);
    this.handle = handle;
    this.sink = sink;
    this.log = log;
    this.pauseInput = pauseInput;
    this.resumeInput = resumeInput;

    this.backlog = []; // passed by the guard, not yet parsed: [bytes, kind] (guard.js, marks)
    this.current = null; // the exchange whose request llhttp is on, or last was
    this.driving = false;
    this.flowing = true;
    this.inputEnded = false;
    this.failure = null;
    this.pendingFailure = null; // found by the guard, acted on once the bytes before it are parsed
    this.stopped = false;
    this.retained = false; // see retainsInput

    // Fields and target that llhttp hands over in pieces (long heads, trailers).
    this.partHeaders = [];
    this.partUrl = '';

    const parser = new HTTPParser();
    // maxHeaderSize is a backstop: the guard counts first, in the spec's bytes (rule 11).
    parser.initialize(HTTPParser.REQUEST, {}, limits.maxHead, HTTPParser.kLenientNone);
    // Node's parser looks this callback up at the start of every message and calls it only
    // if it is a function. Not one, but the parser's own: the lookup of a slot it lacks
    // walks its prototype chain in C++, which costs a worker woken per request more than
    // anything it would do.
    parser[kOnMessageBegin] = null;
    parser[kOnHeaders] = (headers, url) => {
      for (let i = 0; i < headers.length; i++) this.partHeaders.push(headers[i]);
      this.partUrl += url;
    };
    // A Content-Length body does not go through llhttp: the guard has marked its bytes,
    // which go to the handler as they are, without a copy; llhttp is told the message has
    // no body (1: skip it, as for the response to a HEAD). No exception may escape into
    // llhttp: it would be this library's fault, and the stream cannot go on.
    parser[kOnHeadersComplete] = (major, minor, headers, method, url) => {
      try {
        return this._onHead(headers, methods[method], url) ? 1 : 0;
      } catch (err) {
        this._internalError(err);
        return 0;
      }
    };
    parser[kOnBody] = (bytes) => {
      try {
        this._onBody(bytes);
      } catch (err) {
        this._internalError(err);
      }
    };
    // Set as the parser's kOnMessageComplete only while llhttp reads a body itself (chunked,
    // see _onHead); Node's parser calls into JavaScript for it only when it is a function.
    this.llhttpMessageComplete = () => {
      parser[kOnMessageComplete] = null;
      try {
        this._onMessageComplete();
      } catch (err) {
        this._internalError(err);
      }
    };
    parser[kOnMessageComplete] = null;
    this.parser = parser;
  }

  /**
   * Takes bytes read from the request pipe: a Buffer or any other Uint8Array (child.js
   * passes a plain view of its read buffer). Returns false when the caller should pause
   * reading until resumeInput is called.
   */
  push(chunk) {
    if (this.failure || this.pendingFailure || this.stopped) return false;
    this.retained = false;
    const marks = []; // (a new one costs less than emptying one)
    const { error } = this.guard.write(chunk, marks);
    let start = 0;
    for (let i = 0; i < marks.length; i += 2) {
      const end = marks[i];
      this.backlog.push([start === 0 && end === chunk.length ? chunk : chunk.subarray(start, end), marks[i + 1]]);
      start = end;
    }
    if (error) this.pendingFailure = error;
    this._drive();
    return this.flowing;
  }

  /**
   * Whether the core still refers to bytes of the last chunk pushed (a body handed to the
   * handler as it is, a line or request not parsed yet): the caller must not reuse that
   * chunk's memory for the next read.
   */
  get retainsInput() {
    return this.retained || this.backlog.length > 0 || this.guard.partialLength > 0;
  }

  /** The request pipe reached EOF (PROTOCOL.md §9.4). */
  end() {
    if (this.failure || this.pendingFailure || this.stopped) return;
    const error = this.guard.end();
    if (error) {
      this.pendingFailure = error;
      this._drive();
      return;
    }
    this.inputEnded = true;
    this._maybeFinish();
  }

  // Hands the backlog to llhttp, a message at a time.
  _drive() {
    if (this.driving) return;
    this.driving = true;
    try {
      while (this.backlog.length > 0 && !this.stopped && !this.failure) {
        const ex = this.current;
        if (ex !== null && ex.complete && !ex.finished) break; // its response first (§2.1)
        const [bytes, kind] = this.backlog.shift();
        if (kind & MARK_BODY) this._directBody(bytes, (kind & MARK_END) !== 0);
        else if (!this._execute(bytes)) break;
        if ((kind & MARK_END) && this.current !== null && !this.current.complete) {
          // The guard and llhttp disagree on where the message ends: never resynchronise.
          this._fail(fromParserError({ code: 'HPE_UNEXPECTED_END', reason: 'the parser did not end the message' }, false));
          break;
        }
      }
    } finally {
      this.driving = false;
    }
    if (this.backlog.length === 0 && this.pendingFailure !== null && !this.stopped && !this.failure) {
      const error = this.pendingFailure;
      this.pendingFailure = null;
      this._fail(error);
    }
    this._updateFlow();
  }

  // llhttp parses bytes; false after a parse error. It stops early only after a request
  // with Upgrade (which is no upgrade here: the watchdog never forwards one, §5.4), and then
  // goes on with the next request.
  _execute(bytes) {
    let off = 0;
    while (off < bytes.length) {
      const ret = this.parser.execute(off === 0 ? bytes : bytes.subarray(off));
      if (typeof ret !== 'number' || ret === 0) {
        const err = typeof ret === 'number' ? { code: 'HPE_STUCK', reason: 'the parser took no bytes' } : ret;
        this._fail(fromParserError(err, this.guard.inTrailers));
        return false;
      }
      off += ret;
      if (this.stopped || this.failure) return false;
    }
    return true;
  }

  // Whether more input is wanted now: not while a response is owed before the next request
  // can be parsed, nor while the handler has not taken the body bytes already queued.
  _updateFlow() {
    const ex = this.current;
    const want = !this.stopped && !this.failure && this.pendingFailure === null &&
      this.backlog.length === 0 && !(ex !== null && ex.bodyFull && !ex.abandoned);
    if (want === this.flowing) return;
    this.flowing = want;
    if (want) this.resumeInput();
    else this.pauseInput();
  }

  // llhttp has the head of a request: make the exchange and call the handler. Returns
  // whether the request has a Content-Length body, which llhttp is to skip.
  _onHead(headers, method, url) {
    if (headers === undefined) {
      headers = this.partHeaders;
      this.partHeaders = [];
    }
    if (url === undefined) {
      url = this.partUrl;
      this.partUrl = '';
    }
    const headReadAt = performance.now();

    // §5.3: AfterBurn-Request-Id and AfterBurn-Timeout-Ms are exposed through the
    // context, not as fields; AfterBurn-Exchange is kept with the exchange, for its
    // response (§4.6), and exposed nowhere; AfterBurn-Handshake marks the handshake (§3.1).
    // One pass over the fields picks them out; the Request gets the rest. The watchdog
    // sends each once, so the fields are passed as they are with the (at most three)
    // indexes to leave out; a copy without them is made only for a head that repeats one.
    let requestId = null;
    let timeoutMs = -1;
    let exchange = null;
    let handshake = null;
    let host = null;
    let framed = false; // a body follows: chunked, or a Content-Length other than 0
    let direct = false; // it is a Content-Length body
    let omitA = -1;
    let omitB = -1;
    let omitC = -1;
    let kept = null;
    for (let i = 0; i < headers.length; i += 2) {
      const name = headers[i];
      const n = name.length;
      if (n === 4) {
        if (host === null && (name === 'Host' || name.toLowerCase() === 'host')) host = headers[i + 1];
      } else if (n === 14 || n === 17) {
        // The guard has checked both (rules 6 to 8): one of them at most, digits or "chunked".
        const lower = name === 'Content-Length' ? 'content-length' : name.toLowerCase();
        if (lower === 'content-length') framed = direct = !allZeros(headers[i + 1]);
        else if (lower === 'transfer-encoding') framed = true;
      } else if (n >= 18 && n <= 20 && (name.charCodeAt(0) | 0x20) === 0x61) {
        // (The watchdog's own spelling first: no lower-case copy.)
        const lower = name === 'AfterBurn-Request-Id' ? 'afterburn-request-id'
          : name === 'AfterBurn-Timeout-Ms' ? 'afterburn-timeout-ms'
            : name === 'AfterBurn-Exchange' ? 'afterburn-exchange' : name.toLowerCase();
        if (lower === 'afterburn-request-id' || lower === 'afterburn-timeout-ms' || lower === 'afterburn-exchange') {
          if (lower === 'afterburn-request-id') {
            if (requestId === null) requestId = headers[i + 1];
          } else if (lower === 'afterburn-exchange') {
            exchange = headers[i + 1]; // one, 1 to 64 of 0-9 a-z A-Z: checked by the guard (rule 14)
          } else if (timeoutMs < 0) {
            timeoutMs = digitsValue(headers[i + 1]); // digits, checked by the guard (rule 13)
          }
          if (kept !== null) continue;
          if (omitA < 0) omitA = i;
          else if (omitB < 0) omitB = i;
          else if (omitC < 0) omitC = i;
          else kept = withoutFields(headers, i, omitA, omitB, omitC); // a fourth: copy from here on
          continue;
        }
        if (lower === 'afterburn-handshake' && handshake === null) handshake = headers[i + 1];
      }
      if (kept !== null) kept.push(name, headers[i + 1]);
    }

    const ex = {
      method,
      url,
      // §11.1: a legacy watchdog sends no id; the library makes one.
      ctx: new RequestContext(requestId || newRequestId(), timeoutMs, headReadAt, this.log, this.logFormat),
      exchange, // the AfterBurn-Exchange token, echoed in the response head (§4.6), or null
      complete: false, // llhttp has read the whole request
      finished: false, // the response is complete
      headSent: false,
      body: null, // the ReadableStream controller of the request body
      bodyFull: false,
      abandoned: false, // the body is dropped as it arrives (§6.3)
      direct, // a Content-Length body, read here, not by llhttp
      directDone: false,
    };
    this.current = ex;
    // §2.5: the cancel pipe names the exchange by its token.
    if (exchange !== null && handshake === null && this.inFlight !== null) this.inFlight.add(exchange, ex.ctx);
    if (kept !== null) this._start(ex, handshake, kept, -1, -1, -1, host, framed);
    else this._start(ex, handshake, headers, omitA, omitB, omitC, host, framed);
    if (framed && !direct) {
      // A chunked body: llhttp reads it and says when the message ends.
      this.parser[kOnMessageComplete] = this.llhttpMessageComplete;
    } else {
      // No body, or a Content-Length body llhttp is told to skip: llhttp ends the message
      // as soon as this returns, which needs no call back from it (a call from C++ into
      // JavaScript costs a worker woken per request a few microseconds).
      this._onMessageComplete();
    }
    return direct;
  }

  // Answers the handshake, or makes the Request and calls the handler. The fields at
  // omitA, omitB and omitC (when not -1) are not the Request's (§5.3).
  _start(ex, handshake, fields, omitA, omitB, omitC, host, framed) {
    const { method, url } = ex;
    if (handshake !== null) {
      const answer = answerHandshake(handshake, ex.exchange, this.maxLanes); // §3.5: a repeated one has a token
      if (!answer.ok) {
        this.log(answer.record);
        this.refused = true; // §3.4: the whole worker exits, whatever its lanes (§2.5)
        this._writeErrorAndStop(answer.bytes);
        return;
      }
      ex.abandoned = true;
      this._output(answer.bytes);
      this._finished(ex);
      return;
    }

    // §4.2: a request without Content-Length or Transfer-Encoding has an empty body; GET
    // and HEAD cannot carry one in a Request, so theirs is drained instead.
    let body = null;
    if (framed && method !== 'GET' && method !== 'HEAD') body = this._inHand(ex) ?? this._bodyStream(ex);
    else ex.abandoned = true;

    // The request as sent, for ctx.rawTarget and ctx.rawHeaders: the Request normalises both.
    ex.ctx._setRequest(url, fields, omitA, omitB, omitC);
    let request;
    try {
      request = makeRequest(method, requestURL(url, host), fields, body, omitA, omitB, omitC);
    } catch (err) {
      this._handlerFailed(ex, err);
      return;
    }
    let result;
    try {
      result = this.handle(request, ex.ctx);
    } catch (err) {
      this._handlerFailed(ex, err);
      return;
    }
    if (result !== null && typeof result === 'object' && typeof result.then === 'function') {
      result.then((response) => this._respond(ex, response), (err) => this._handlerFailed(ex, err));
    } else {
      this._respond(ex, result);
    }
  }

  // A Content-Length body that arrived whole with its head (the watchdog writes a small one
  // with the head, §6.1) goes to the Request as it is, copied out of the read buffer, which
  // is then free for the next read: no stream unless the handler asks for one
  // (lib/known-body.js). Nothing is left to pause for or to drain (§6.3).
  _inHand(ex) {
    if (!ex.direct || this.backlog.length === 0) return null;
    const [bytes, kind] = this.backlog[0];
    if (kind !== (MARK_BODY | MARK_END)) return null;
    this.backlog.shift();
    const copy = Buffer.allocUnsafeSlow(bytes.length);
    copy.set(bytes);
    ex.directDone = true;
    return new InHandBody(copy);
  }

  // The request body as a ReadableStream of Buffers; its back-pressure pauses the input.
  _bodyStream(ex) {
    return new ReadableStream({
      start: (controller) => {
        ex.body = controller;
      },
      pull: () => {
        if (!ex.bodyFull) return;
        ex.bodyFull = false;
        this._updateFlow();
      },
      cancel: () => {
        // A handler that stops reading must not stop the stream: the rest is the
        // library's to drain (§6.3).
        this._abandonBody(ex);
      },
    }, { highWaterMark: BODY_HIGH_WATER_MARK, size: (chunk) => chunk.byteLength });
  }

  // Returns whether the bytes went to the handler (and so are referred to from now on).
  _onBody(bytes) {
    const ex = this.current;
    if (ex === null || ex.abandoned || ex.body === null) return false;
    ex.body.enqueue(asBuffer(bytes)); // a streamed request body yields Buffers
    if (ex.body.desiredSize <= 0) ex.bodyFull = true;
    return true;
  }

  // Bytes of a Content-Length body, marked as such by the guard.
  _directBody(bytes, ends) {
    if (bytes.length > 0 && this._onBody(bytes)) this.retained = true;
    if (!ends) return;
    const ex = this.current;
    if (ex !== null) ex.directDone = true;
    this._onMessageComplete();
  }

  _onMessageComplete() {
    // Fields llhttp hands over now are the chunked body's trailer section (§5.4): no part of
    // a fetch Request, they go to ctx.trailers before the body's stream closes, so a handler
    // that has read the body to its end finds them there. (The URL llhttp reports with them
    // is nothing.)
    let trailers = EMPTY_LIST;
    if (this.partHeaders.length > 0) {
      trailers = this.partHeaders;
      this.partHeaders = [];
    }
    this.partUrl = '';
    const ex = this.current;
    if (ex === null) return;
    if (ex.direct && !ex.directDone) return; // llhttp skipped the body; it is still to come
    ex.complete = true;
    ex.ctx._setTrailers(trailers);
    if (ex.body !== null && !ex.abandoned) {
      ex.body.close();
      ex.body = null;
    }
    this._maybeFinish();
  }

  _abandonBody(ex) {
    if (ex.abandoned) return;
    ex.abandoned = true;
    ex.bodyFull = false;
    if (ex.body !== null && !ex.complete) {
      try {
        ex.body.error(new Error('afterburn: the exchange has ended'));
      } catch {
        // already closed or cancelled
      }
    }
    ex.body = null;
    if (!this.driving) this._updateFlow();
  }

  // Not async: a body known at once is written before this returns, without a promise.
  _respond(ex, response) {
    if (this.stopped || this.failure) return;
    try {
      const r = readResponse(response);
      const { status, stream, length: declared } = r;
      let { bytes } = r;
      if (!Number.isInteger(status) || status < 200 || status > 999) {
        throw new RangeError(`afterburn: the handler's Response has status ${status}; want 200 to 999 (§4.4)`);
      }
      const noBody = ex.method === 'HEAD' || status === 204 || status === 304; // §4.4
      const reason = r.reason || STATUS_CODES[status] || 'unknown';
      let fields = r.lines;

      if (bytes === null && stream === null) bytes = EMPTY;
      if (bytes !== null && !noBody && declared < 0 && hasTrailers(ex)) {
        // Trailers added before the response was returned: they need a chunked body (§5.4).
        this._writeHead(ex, status, reason, `${fields}transfer-encoding: chunked\r\n`, null);
        this._writeChunk(typeof bytes === 'string' ? Buffer.from(bytes, 'utf8') : bytes);
        this._lastChunk(ex);
        this._finished(ex);
        return;
      }
      if (bytes !== null) {
        // The whole body is known: Content-Length, one write (§4.4).
        if (typeof bytes === 'string') {
          if (!noBody && declared < 0 && bytes.length <= COALESCE_MAX / 3) {
            this._writeHeadAndText(ex, status, reason, fields, bytes);
            this._finished(ex);
            return;
          }
          bytes = Buffer.from(bytes, 'utf8');
        }
        if (noBody) {
          if (declared < 0 && status !== 204 && status !== 304) fields += `content-length: ${bytes.byteLength}\r\n`;
          this._writeHead(ex, status, reason, fields, null);
        } else {
          if (declared >= 0 && declared !== bytes.byteLength) {
            throw new TypeError(`afterburn: the handler's Response has Content-Length ${declared} ` +
              `and a body of ${bytes.byteLength} bytes`);
          }
          if (declared < 0) fields += `content-length: ${bytes.byteLength}\r\n`;
          this._writeHead(ex, status, reason, fields, bytes);
        }
        this._finished(ex);
        return;
      }
      if (noBody) {
        stream.cancel().catch(() => {});
        this._writeHead(ex, status, reason, fields, null);
        this._finished(ex);
        return;
      }
      this._stream(ex, status, reason, fields, declared, stream).catch((err) => this._handlerFailed(ex, err));
    } catch (err) {
      this._handlerFailed(ex, err);
    }
  }

  // A body that comes as a stream: each chunk is written as the stream yields it (§6.1).
  async _stream(ex, status, reason, fields, declared, stream) {
    const reader = stream.getReader();
    try {
      if (declared >= 0) {
        // The handler said how long it is: the body is sent as is and must be that long.
        this._writeHead(ex, status, reason, fields, null);
        let sent = 0;
        for (;;) {
          const { done, value } = await reader.read();
          if (this.stopped) return;
          if (done) break;
          const chunk = asBytes(value);
          sent += chunk.byteLength;
          if (sent > declared) throw new RangeError(`afterburn: the body is longer than its Content-Length ${declared}`);
          if (chunk.byteLength > 0) this._output(chunk);
          if (this.sink.drained !== undefined && !(await this._drained())) return;
        }
        if (sent !== declared) throw new RangeError(`afterburn: the body ended ${declared - sent} bytes short of its Content-Length`);
        this._finished(ex);
        return;
      }
      const first = await reader.read();
      if (this.stopped) return;
      if (first.done && !hasTrailers(ex)) {
        this._writeHead(ex, status, reason, `${fields}content-length: 0\r\n`, null);
        this._finished(ex);
        return;
      }
      // (An empty body gets here only to carry trailers: its first read is the last.)
      let pending = first.done ? first : reader.read();
      // A body that was all there at once (a stream closed right after its one chunk) still
      // gets Content-Length: the second read has settled already, or does within the turn.
      const settled = first.done ? first : await Promise.race([pending, nextTurn()]);
      if (this.stopped) return;
      const firstBytes = first.done ? EMPTY : asBytes(first.value);
      if (settled !== undefined && settled.done && !hasTrailers(ex)) {
        this._writeHead(ex, status, reason, `${fields}content-length: ${firstBytes.byteLength}\r\n`, firstBytes);
        this._finished(ex);
        return;
      }
      this._writeHead(ex, status, reason, `${fields}transfer-encoding: chunked\r\n`, null);
      this._writeChunk(firstBytes);
      for (;;) {
        const next = await pending;
        if (this.stopped) return;
        if (next.done) break;
        this._writeChunk(asBytes(next.value)); // written to the pipe now: a chunk per read (§6.1)
        if (this.sink.drained !== undefined && !(await this._drained())) return;
        pending = reader.read();
      }
      this._lastChunk(ex);
      this._finished(ex);
    } catch (err) {
      reader.cancel(err).catch(() => {});
      throw err;
    }
  }

  // A lane's writer (§2.5) holding more than it likes: the stream is read on once it has
  // written it, so a client that does not read stalls its own handler and no one else's.
  // Returns whether to go on (false once the connection stopped).
  async _drained() {
    const wait = this.sink.drained();
    if (wait !== null) await wait;
    return !this.stopped;
  }

  // Every head of an exchange's response is made here, a 500 of the library's included: the
  // status line, then the exchange token of a request that carried one (§4.6), then the
  // fields (lines with their CRLFs) and the empty line. One place, so no way of answering
  // can leave the token out, and none can write it twice: a handler's own is dropped
  // (fetch.js readResponse). A part of the head's own string, it costs no write; spelled
  // here rather than with errors.js's exchangeLine, which would make the line a string of
  // its own before the head, per request.
  _head(ex, status, reason, fields) {
    const token = ex.exchange;
    return token === null ? `HTTP/1.1 ${status} ${reason}\r\n${fields}\r\n`
      : `HTTP/1.1 ${status} ${reason}\r\nAfterBurn-Exchange: ${token}\r\n${fields}\r\n`;
  }

  // A head, and the body known with it in the same write up to COALESCE_MAX (§4.6 asks for
  // one write; the kernel keeps a pipe write whole only up to PIPE_BUF, 4096 bytes).
  _writeHead(ex, status, reason, fields, body) {
    ex.headSent = true;
    const head = this._head(ex, status, reason, fields);
    if (body === null || body.byteLength === 0) {
      this._outputLatin1(head);
      return;
    }
    if (body.byteLength > COALESCE_MAX) {
      this._output(Buffer.from(head, 'latin1'));
      this._output(body);
      return;
    }
    const out = Buffer.allocUnsafe(head.length + body.byteLength);
    out.latin1Write(head, 0);
    out.set(body, head.length);
    this._output(out);
  }

  // A head with Content-Length and a short text body in one write.
  _writeHeadAndText(ex, status, reason, fields, text) {
    ex.headSent = true;
    const size = Buffer.byteLength(text, 'utf8');
    const full = this._head(ex, status, reason, `${fields}content-length: ${size}\r\n`);
    if (size === text.length) {
      // Only ASCII (a UTF-16 unit of U+0080 or above takes 2 or more bytes in UTF-8): the
      // text's UTF-8 bytes are its latin1 ones, so head and body go as one string.
      this._outputLatin1(full + text);
      return;
    }
    const out = Buffer.allocUnsafe(full.length + size);
    out.latin1Write(full, 0);
    out.utf8Write(text, full.length);
    this._output(out);
  }

  _writeChunk(bytes) {
    const n = bytes.byteLength;
    if (n === 0) return; // an empty chunk would be the last one
    const size = `${n.toString(16)}\r\n`;
    if (n > COALESCE_MAX) {
      this._output(Buffer.from(size, 'latin1'));
      this._output(bytes);
      this._output(CRLF);
      return;
    }
    const out = Buffer.allocUnsafe(size.length + n + 2);
    out.latin1Write(size, 0);
    out.set(bytes, size.length);
    out[size.length + n] = 0x0d;
    out[size.length + n + 1] = 0x0a;
    this._output(out);
  }

  // The last chunk, with the trailers the handler added by now (ctx.addTrailers, §5.4).
  _lastChunk(ex) {
    if (hasTrailers(ex)) this._outputLatin1(lastChunk(ex.ctx._responseTrailers.lines()));
    else this._output(LAST_CHUNK);
  }

  _output(chunk) {
    if (this.stopped) return; // a response abandoned by §8.3 or §8.8
    try {
      this.sink.write(chunk);
    } catch (err) {
      this._stop(1, `writing the response pipe: ${err.message}`);
    }
  }

  // Text of one byte per character (a head, or a head and an ASCII body). A sink that
  // takes it as it is (child.js: fs.writeSync encodes it in C++) spares a Buffer and the
  // calls that fill it, which cost more than the write itself in a worker that wakes per
  // request.
  _outputLatin1(text) {
    if (this.stopped) return;
    try {
      if (this.sink.writeLatin1 !== undefined) this.sink.writeLatin1(text);
      else this.sink.write(Buffer.from(text, 'latin1'));
    } catch (err) {
      this._stop(1, `writing the response pipe: ${err.message}`);
    }
  }

  _finished(ex) {
    if (ex.finished) return;
    ex.finished = true;
    this._abandonBody(ex); // §6.3: whatever the handler left unread is drained
    ex.ctx._end();
    if (this.failure) {
      this._settleFailure();
      return;
    }
    if (!this.driving) this._drive();
    this._maybeFinish();
  }

  // §9.4: after EOF between requests, finish what is in progress, then stop with 0.
  _maybeFinish() {
    const ex = this.current;
    if (this.inputEnded && !this.stopped && this.backlog.length === 0 &&
        (ex === null || (ex.complete && ex.finished))) {
      this._stop(0);
    }
  }

  // PROTOCOL.md §8.3: the exception and its stack go to stderr in one write whose first
  // line names the request id; the client sees only the §8.1 body.
  _handlerFailed(ex, err) {
    if (this.stopped) return;
    this.log(handlerFailureRecord(ex.ctx.requestId, ex.method, ex.url, err));
    if (this.failure) return; // the framing error decides what the client gets
    if (ex.finished) return; // the response was already complete
    if (!ex.headSent) {
      const body = errorBody('handler_error', ex.ctx.requestId);
      this._writeHead(ex, 500, 'Internal Server Error', 'Content-Type: application/json\r\n' +
        `AfterBurn-Error: handler_error\r\nContent-Length: ${Buffer.byteLength(body)}\r\n`, Buffer.from(body));
      this._finished(ex);
      return;
    }
    // The head is out: the response must stay visibly incomplete (no last chunk, or short
    // of its Content-Length). Stop.
    this._stop(1, `the handler failed after its response started (request ${ex.ctx.requestId})`);
  }

  /** A framing error (§8.8) from the guard or from llhttp. */
  _fail(error) {
    if (this.failure || this.stopped) return;
    this.failure = error;
    const cur = this.current;
    // The error lies in the body of the last request parsed if that body is not complete
    // yet; otherwise in a request that never reached a handler.
    this.failedExchange = cur !== null && !cur.complete ? cur : null;
    this.log(`${this.failedExchange ? `[${this.failedExchange.ctx.requestId}] ` : ''}${error.message}\n`);
    this._settleFailure();
    this._updateFlow();
  }

  // Once the response owed to an earlier request is out, answer the failure.
  _settleFailure() {
    if (this.stopped) return;
    const owner = this.failedExchange;
    const cur = this.current;
    if (cur !== null && cur !== owner && !cur.finished) return;
    if (owner && owner.headSent) {
      this._stop(1); // its status is final: leave the response incomplete (§8.3, §8.8)
      return;
    }
    // §4.6: the token of the request it broke, once that request's head was read: the
    // exchange's for an error in its body, the guard's for one at the end of its head.
    const token = owner ? owner.exchange : this.failure.exchange;
    this._writeErrorAndStop(errorResponseBytes(this.failure.type, owner ? owner.ctx.requestId : null, token));
  }

  _writeErrorAndStop(bytes) {
    this._output(bytes);
    this._stop(1);
  }

  _internalError(err) {
    this._stop(1, `internal error: ${err && err.stack ? err.stack : err}`);
  }

  _stop(code, reason) {
    if (this.stopped) return;
    this.stopped = true;
    if (reason) this.log(`afterburn: ${reason}\n`);
    const ex = this.current;
    if (ex !== null && !ex.finished) ex.ctx._end();
    this.flowing = false;
    this.sink.end(code);
  }
}

const EMPTY = new Uint8Array(0);
const EMPTY_LIST = Object.freeze([]);

// Whether the handler added response trailers (ctx.addTrailers).
function hasTrailers(ex) {
  const t = ex.ctx._responseTrailers;
  return t !== null && t.pairs.length > 0;
}

// Whether a Content-Length value (digits, checked by the guard, rule 6) is zero.
function allZeros(value) {
  for (let i = 0; i < value.length; i++) if (value.charCodeAt(i) !== 0x30) return false;
  return true;
}

// The value of a string of ASCII digits (checked by the guard, rule 13), read here rather
// than by Number(), whose conversion of a string made in C++ goes through the runtime.
// Exact below 2^53; a larger value is far past the most RequestContext keeps
// (MAX_TIMEOUT_MS, context.js), to which it cuts this as it would Number()'s.
function digitsValue(value) {
  let n = 0;
  for (let i = 0; i < value.length; i++) n = n * 10 + (value.charCodeAt(i) - 0x30);
  return n;
}

// The fields [name, value, ...] before `upTo` without the three at omitA, omitB and omitC
// (each -1 or an index below upTo): the start of the copy _onHead makes for a head that
// repeats a field of §5.3.
function withoutFields(headers, upTo, omitA, omitB, omitC) {
  const kept = [];
  for (let i = 0; i < upTo; i += 2) {
    if (i !== omitA && i !== omitB && i !== omitC) kept.push(headers[i], headers[i + 1]);
  }
  return kept;
}

// The bytes as a Buffer, over the same memory.
function asBuffer(bytes) {
  return Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

module.exports = { FetchConnection };
