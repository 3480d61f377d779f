'use strict';

// Theory of operation.
//
// The core of a fetch-style worker: the same contract as connection.js (bytes in through
// push/end, bytes out through a synchronous sink, an exit status at the end), without
// http.Server, IncomingMessage and ServerResponse, which a handler that gets an undici
// Request and returns an undici Response never sees:
//
//   bytes in → FrameGuard (guard.js), marked (framer.js) → llhttp (fetch-request.js) → Request
//   → handler
//   handler → Response → head and body serialized (fetch-response.js) → sink (bytes out)
//
// This file is the loop that ties the two sides together. The FrameGuard sees every byte
// first and applies the rules of §4.3 that llhttp lacks; the Framer (framer.js) marks, from
// what the guard found, where each message ends.
// Bytes it passes wait in `backlog` and go to llhttp one message at a time: the next
// request is parsed only once the response to the one before it is complete (§2.1: one
// exchange at a time), so a stream that pipelines requests still gets its responses in
// order. The input pauses while a response is owed or while the handler has not taken the
// body bytes queued for it. Each head is answered here: the handshake (§3.1) by the
// library, any other request by the handler, whose Response the response side writes.
//
// Every head of a handler's Response is made by fetch-response.js, which puts the request's
// AfterBurn-Exchange token right after the status line (§4.6); the handshake reply and the
// §8.1 errors carry it too (protocol.js, errors.js).
//
// A framing error (§8.8), from the guard or from llhttp, stops the input; the §8.1 error
// response is written once the response owed to an earlier request is out, unless the
// failing request's own response has already started (its status is final then), and the
// connection stops with a non-zero status. That life (failing, stopping, EOF) is the
// Lifecycle's (lifecycle.js), which the listener core shares; this file answers its
// questions from its own exchange records.

const { Framer, MARK_BODY, MARK_END } = require('./framer');
const { errorResponseBytes, fromParserError } = require('./errors');
const { startFetchHandler, requestURL, makeRequest } = require('./fetch');
const { llhttpParser, requestBody, directBody, abandonBody } = require('./fetch-request');
const { respond } = require('./fetch-response');
const { Lifecycle } = require('./lifecycle');

class FetchConnection extends Lifecycle {
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
  constructor(options) {
    const { limits, handle } = options;
    startFetchHandler(handle);
    const framer = new Framer(limits);
    super(options, framer.guard);
    this.framer = framer;
    this.backlog = []; // passed by the guard, not yet parsed: [bytes, kind] (framer.js, marks)
    this.driving = false;
    this.flowing = true;
    this.retained = false; // see retainsInput

    // Fields and target that llhttp hands over in pieces (long heads, trailers).
    this.partHeaders = [];
    this.partUrl = '';

    // llhttp and its kOnMessageComplete while it reads a body itself (fetch-request.js).
    const { parser, messageComplete } = llhttpParser(this, limits);
    this.parser = parser;
    this.llhttpMessageComplete = messageComplete;
  }

  /**
   * Takes bytes read from the request pipe: a Buffer or any other Uint8Array (child.js
   * passes a plain view of its read buffer). Returns false when the caller should pause
   * reading until resumeInput is called.
   */
  push(chunk) {
    if (!this.takesInput) return false;
    this.retained = false;
    const marks = []; // (a new one costs less than emptying one)
    const { error } = this.framer.write(chunk, marks);
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

  // The lifecycle's (lifecycle.js): the guard found an error ahead of llhttp; _drive acts
  // on it once the backlog before it is parsed.
  _failAfterParsed(error) {
    this.pendingFailure = error;
    this._drive();
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
        if (kind & MARK_BODY) directBody(this, bytes, (kind & MARK_END) !== 0);
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

  // The exchange's head is read (fetch-request.js): answer the handshake, or make the
  // Request and call the handler. The fields at omitA, omitB and omitC (when not -1) are
  // not the Request's (§5.3).
  _start(ex, handshake, fields, omitA, omitB, omitC, host, framed) {
    const { method, url } = ex;
    if (handshake !== null) {
      const answer = this._handshake(ex, handshake); // §3.1 (lifecycle.js)
      if (answer === null) return;
      ex.abandoned = true;
      this._output(answer.bytes);
      this._finished(ex);
      return;
    }

    const body = requestBody(this, ex, framed);

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
      result.then((response) => respond(this, ex, response), (err) => this._handlerFailed(ex, err));
    } else {
      respond(this, ex, result);
    }
  }

  // The lifecycle's (lifecycle.js): ex's response is complete (fetch-response.js), or it had
  // none to send.
  _closeExchange(ex) {
    if (ex.finished) return false;
    ex.finished = true;
    abandonBody(this, ex); // §6.3: whatever the handler left unread is drained
    return true;
  }

  // The lifecycle's: the next request may be parsed now (§2.1).
  _nextRequest() {
    if (!this.driving) this._drive();
  }

  // §9.4: after EOF between requests, finish what is in progress, then stop with 0.
  _maybeFinish() {
    const ex = this.current;
    if (this.inputEnded && !this.stopped && this.backlog.length === 0 &&
        (ex === null || (ex.complete && ex.finished))) {
      this._stop(0);
    }
  }

  // The lifecycle's: whether the response to an exchange other than owner is still open
  // (one exchange at a time: the current one's).
  _owesEarlier(owner) {
    const cur = this.current;
    return cur !== null && cur !== owner && !cur.finished;
  }

  // The lifecycle's (§8.3): §8.1, with the request's token (§4.6): errors.js makes it, in
  // one write.
  _answerHandlerError(ex) {
    ex.headSent = true;
    this._output(errorResponseBytes('handler_error', ex.ctx.requestId, ex.exchange));
    this._finished(ex);
  }

  // The lifecycle's: after a framing error, read no more.
  _holdInput() {
    this._updateFlow();
  }

  // The lifecycle's: stopping, the open exchange ends and no input is wanted.
  _halt() {
    const ex = this.current;
    if (ex !== null && !ex.finished) ex.ctx._end();
    this.flowing = false;
  }
}

module.exports = { FetchConnection };
