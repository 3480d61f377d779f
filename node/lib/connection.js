'use strict';

// Theory of operation.
//
// A worker reads HTTP/1.1 requests from one pipe and writes responses to another, one
// exchange after another, for its whole life (PROTOCOL.md §2.1, §4.1). A Connection is
// that stream, as bytes in and bytes out; it never touches a descriptor (child.js does).
//
//   bytes in → FrameGuard (guard.js) → Duplex → http.Server (llhttp) → handler
//   handler → ServerResponse → Duplex → sink.write (bytes out)
//
// http.Server is handed the Duplex as its one connection, so Node's own parser frames
// requests (keep-alive, chunked bodies, trailers) and Node's ServerResponse frames
// responses (Content-Length or chunked, no body for HEAD, 204 and 304). The FrameGuard
// adds the checks of §4.3 that llhttp lacks, and tells clean EOF from EOF inside a request.
//
// Every head a ServerResponse writes carries the request's AfterBurn-Exchange token (§4.6),
// set as a field as the head is made (PipeResponse in pipe-response.js, public API only);
// the library's own error responses carry it too.
//
// A framing error (§8.8), from the guard or from llhttp's clientError, stops the input.
// Responses owed to earlier requests are finished first; then the §8.1 error response is
// written straight to the sink, unless the failing request's own response has already
// started (its status is final then), and the connection stops with a non-zero status.
// That life (failing, stopping, EOF) is the Lifecycle's (lifecycle.js), which the fetch
// core shares; this file answers its questions from Node's own objects.

const http = require('node:http');
const { Duplex } = require('node:stream');
const { FrameGuard } = require('./guard');
const { errorBody, fromParserError } = require('./errors');
const { RequestContext, newRequestId, kContext } = require('./context');
const { readMetadata, withoutMetadata } = require('./metadata');
const { LIBRARY_VERSION, PROTOCOL_VERSION, handshakeReply } = require('./protocol');
const { PipeResponse, kExchange, EXCHANGE } = require('./pipe-response');
const { Lifecycle } = require('./lifecycle');

// An exchange as the lifecycle asks about it (lifecycle.js): Node's request and response
// answer for it.
class ListenerExchange {
  constructor(req, res, ctx, exchange) {
    this.req = req;
    this.res = res;
    this.ctx = ctx;
    this.exchange = exchange; // the AfterBurn-Exchange token (§4.6), or null
  }

  get method() {
    return this.req.method;
  }

  get url() {
    return this.req.url;
  }

  /** llhttp has read the whole request. */
  get complete() {
    return this.req.complete;
  }

  get headSent() {
    return this.res.headersSent;
  }

  /** The response is complete: the handler has ended it. */
  get finished() {
    return this.res.writableEnded;
  }
}

class Connection extends Lifecycle {
  /**
   * @param {object} options
   * @param {{maxHead: number, maxBody: number}} options.limits PROTOCOL.md §7.3
   * @param {(req: http.IncomingMessage, res: http.ServerResponse, ctx: RequestContext) => unknown} options.handle
   * @param {{write(chunk: Buffer): boolean | void, end(code: number): void,
   *   onDrain?(cb: () => void): void}} options.sink the response pipe: write takes the
   *   bytes at once (synchronously into the pipe, or queued by a lane's writer, which then
   *   returns false while it holds more than it likes and calls onDrain's callback once it
   *   has written them); end is called once, with the exit status the worker should have
   *   (0 after a clean EOF, §9.4; non-zero after a failure, §8.3, §8.8).
   * @param {(text: string) => void} options.log one call per record (stderr, §9.5)
   * @param {() => void} [options.pauseInput] called when the parser wants no more bytes for now
   * @param {() => void} [options.resumeInput] called when it wants bytes again
   * @param {number} [options.maxLanes] the AfterBurn-Streams of the handshake reply (§2.5)
   * @param {number | null} [options.preferredLanes] its AfterBurn-Streams-Preferred, when
   *   the watchdog offered lanes (lanes=auto, §2.5); null otherwise
   * @param {import('./cancel').InFlight | null} [options.inFlight] where exchanges are
   *   tracked by token for the cancel pipe (§2.5), or null
   * @param {'text' | 'json'} [options.logFormat] ctx.log's lines (AFTERBURN_LOG_FORMAT)
   */
  constructor(options) {
    const { limits } = options;
    super(options, new FrameGuard(limits));
    this.handshakeHead = handshakeReply(this.maxLanes, this.preferredLanes).fields.flat();
    this.dispatched = 0; // requests handed to _onRequest
    this.open = new Set(); // exchanges whose response has not finished

    this.socket = new Duplex({
      allowHalfOpen: true,
      read: () => this.resumeInput(),
      // A lane's writer that holds too much calls back once it has written it: Node's
      // ServerResponse then tells the handler to wait ('drain'), as on a TCP socket.
      write: (chunk, _encoding, cb) => {
        if (this._output(chunk)) cb();
        else this.sink.onDrain(cb);
      },
      writev: (chunks, cb) => {
        if (this._output(chunks.length === 1 ? chunks[0].chunk : Buffer.concat(chunks.map((c) => c.chunk)))) cb();
        else this.sink.onDrain(cb);
      },
      final: (cb) => cb(),
    });
    this.socket.on('close', () => {
      // Node closes its connection only when a handler destroyed the response or its
      // socket: the response is incomplete and the stream cannot go on.
      if (!this.stopped) this._stop(1, 'the response stream was destroyed by the handler');
    });

    this.server = http.createServer({
      ServerResponse: PipeResponse,
      maxHeaderSize: limits.maxHead, // a backstop: the guard counts first (guard.js)
      requireHostHeader: false, // the guard applies rule 10 with its own error body
      insecureHTTPParser: false,
      joinDuplicateHeaders: false,
      // The watchdog owns every timeout (§5.2, §10.2); none may close the pipe.
      requestTimeout: 0,
      headersTimeout: 0,
      keepAliveTimeout: 0,
      connectionsCheckingInterval: 2 ** 31 - 1,
    });
    this.server.timeout = 0;
    this.server.on('request', (req, res) => this._onRequest(req, res));
    // §4.4: a library never sends 1xx, and Expect is the watchdog's (§5.4): requests
    // with Expect reach the handler like any other instead of Node's 100 or 417.
    this.server.on('checkContinue', (req, res) => this._onRequest(req, res));
    this.server.on('checkExpectation', (req, res) => this._onRequest(req, res));
    this.server.on('clientError', (err) => this._fail(fromParserError(err, this.guard.inTrailers)));
    this.server.emit('connection', this.socket);
    // After Node's own 'data' listener: the bytes before a failure have been parsed.
    this.socket.on('data', () => this._checkPendingFailure());
  }

  /**
   * Takes bytes read from the request pipe. Returns false when the caller should pause
   * reading until resumeInput is called.
   */
  push(chunk) {
    if (!this.takesInput) return false;
    const { pass, error } = this.guard.write(chunk);
    let more = true;
    if (pass > 0) more = this.socket.push(pass === chunk.length ? chunk : chunk.subarray(0, pass));
    if (error) {
      this._failAfterParsed(error);
      return false;
    }
    if (!more) this.pauseInput();
    return more;
  }

  _onRequest(req, res) {
    if (this.failure || this.stopped) return; // bytes parsed after a framing error
    res.shouldKeepAlive = true; // §4.1: the stream is persistent, whatever the request says
    const headReadAt = performance.now();
    this.dispatched++;

    // §5.3: AfterBurn-Request-Id and AfterBurn-Timeout-Ms are exposed through the
    // context, not as fields; AfterBurn-Exchange goes on the response, for its head (§4.6),
    // and is exposed nowhere; AfterBurn-Handshake marks the handshake (§3.1) (metadata.js).
    const metadata = readMetadata(req.rawHeaders);
    const { requestId, timeoutMs, exchange, handshake } = metadata;
    if (metadata.omitA >= 0) {
      req.rawHeaders = withoutMetadata(req.rawHeaders, metadata);
      delete req.headers['afterburn-request-id'];
      delete req.headers['afterburn-timeout-ms'];
      delete req.headers[EXCHANGE];
    }
    res[kExchange] = exchange;

    // §11.1: a legacy watchdog sends no id; the library makes one.
    const ctx = new RequestContext(requestId || newRequestId(), timeoutMs, headReadAt, this.log, this.logFormat);
    // §2.5: the cancel pipe names the exchange by its token.
    if (exchange !== null && handshake === null && this.inFlight !== null) this.inFlight.add(exchange, ctx);
    const ex = new ListenerExchange(req, res, ctx, exchange);
    req[kContext] = ctx;
    // The request as sent and, once the body is read, its trailers (§5.4), on ctx as in the
    // fetch style; ctx.addTrailers goes to res.addTrailers (fetch-listener.js unsets it).
    ctx._setRequest(req.url, req.rawHeaders);
    ctx._listenerResponse = res;
    req.once('end', () => ctx._setTrailers(req.rawTrailers));
    // A handler that stops reading (req.destroy(), or `break` out of `for await`) must not
    // take the connection down as it would a TCP one: the rest of the body is the
    // library's to drain (§6.3).
    req._destroy = (err, cb) => {
      this._abandonBody(req);
      cb(req.listenerCount('error') > 0 ? err : null);
    };
    this.current = ex;
    this.open.add(ex);
    res.once('finish', () => this._finished(ex));

    if (handshake !== null) {
      this._answerHandshake(ex, handshake);
      return;
    }
    try {
      const result = this.handle(req, res, ctx);
      if (result && typeof result.then === 'function') {
        result.then(undefined, (err) => this._handlerFailed(ex, err));
      }
    } catch (err) {
      this._handlerFailed(ex, err);
    }
  }

  // The lifecycle's (lifecycle.js): ex's response is complete.
  _closeExchange(ex) {
    this.open.delete(ex);
    this._abandonBody(ex.req); // §6.3: whatever the handler left unread is drained
    return true;
  }

  // The lifecycle's: whether a response to an exchange other than owner is still open.
  _owesEarlier(owner) {
    for (const ex of this.open) if (ex !== owner) return true;
    return false;
  }

  // Node's own IncomingMessage._dump, for every case: the parser drops the rest of the
  // body instead of buffering it for a reader that is gone, and the stream flows again.
  _abandonBody(req) {
    if (req.complete || req._dumped) return;
    req._dumped = true;
    req.removeAllListeners('data');
    if (!this.socket._paused) this.socket.resume();
  }

  // §9.4: after EOF between requests, finish what is in progress, then stop with 0.
  _maybeFinish() {
    if (this.inputEnded && this.open.size === 0 && this.dispatched === this.guard.messages && !this.stopped) {
      this._stop(0);
    }
  }

  // PROTOCOL.md §3.1, §3.2 (lifecycle.js); the reply to a repeated one echoes its token
  // (§4.6) like any head ServerResponse writes.
  _answerHandshake(ex, offered) {
    if (this._handshake(ex, offered) === null) return;
    ex.res.writeHead(200, this.handshakeHead);
    ex.res.end();
  }

  // The lifecycle's (§8.3): the §8.1 body through the ServerResponse, which puts the
  // request's token on its head (§4.6), in place of whatever the handler had set.
  _answerHandlerError(ex) {
    const { res, ctx } = ex;
    for (const name of res.getHeaderNames()) res.removeHeader(name);
    const body = errorBody('handler_error', ctx.requestId);
    res.writeHead(500, [
      'Content-Type', 'application/json',
      'AfterBurn-Error', 'handler_error',
      'Content-Length', String(Buffer.byteLength(body)),
    ]);
    res.end(body);
  }

  // The guard finds an error in bytes the parser has not necessarily seen yet: the Duplex
  // may still hold requests that come before it. Act once it has handed them all over.
  _failAfterParsed(error) {
    this.pendingFailure = error;
    this.pauseInput();
    this._checkPendingFailure();
  }

  _checkPendingFailure() {
    if (this.pendingFailure === null || this.socket.readableLength > 0) return;
    const error = this.pendingFailure;
    this.pendingFailure = null;
    this._fail(error);
  }

  // The lifecycle's: after a framing error, read no more.
  _holdInput() {
    this.pauseInput();
  }

  // Node corks the connection while it writes a response and uncorks on the next tick;
  // before stopping, hand whatever it buffered to the sink so flushed bytes are not lost.
  _flushPending() {
    while (this.socket.writableCorked > 0) this.socket.uncork();
  }

  // The lifecycle's: stopping, every exchange whose response is open ends.
  _halt() {
    for (const ex of this.open) ex.ctx._end();
  }
}

module.exports = { Connection, PROTOCOL_VERSION, LIBRARY_VERSION };
