'use strict';

// Theory of operation.
//
// One connection's life, the same in every core: connection.js (the listener core, which
// fetch-listener.js extends) and fetch-connection.js (the fetch core). Bytes come in through
// push and end, responses go out through the sink, and the connection ends once, with the
// exit status the worker should have. This file owns that life: its state and the
// transitions that move it. A core parses and answers; it asks and calls these, it does not
// assign their state.
//
//   serving  → stopped 0  EOF between requests, every response finished (§9.4)
//   serving  → failing    a framing error (§8.8), from the guard or from llhttp: the input
//                         stops; responses owed to earlier requests are finished first
//   failing  → stopped 1  then the §8.1 error response, unless the failing request's own
//                         response has started (its status is final: left incomplete)
//   serving  → stopped 1  a handler that failed after its head (§8.3), a refused handshake
//                         (§3.4: the whole worker), a broken response pipe, a library bug
//
// An exchange, as the lifecycle asks about it, has ctx, exchange (its token, §4.6), method,
// url, complete (its request was read whole), headSent and finished (its response is
// complete). What each core supplies:
//
//   push(chunk)                bytes from the request pipe, through the guard to the parser
//   _failAfterParsed(error)    the guard found an error ahead of the parser: fail once the
//                              bytes before it are parsed
//   _maybeFinish()             after EOF: stop with 0 once every request is answered
//   _closeExchange(ex)         a response is complete: forget the exchange, drain the rest of
//                              its body (§6.3); false if it was closed already
//   _nextRequest()             a response is complete: parse on, if the core waited for it
//   _owesEarlier(owner)        whether a response to another exchange than owner is open
//   _holdInput()               after a failure: read no more
//   _halt()                    stopping: end every open exchange's ctx, want no more input
//   _answerHandlerError(ex)    §8.1's 500 handler_error, before any head of ex's
//   _flushPending()            (optional) bytes the core holds back, to the sink now

const { framingRecord, framingResponseBytes } = require('./errors');
const { DEFAULT_MAX_LANES, answerHandshake, handlerFailureRecord } = require('./protocol');

class Lifecycle {
  /**
   * @param {object} options Connection's (connection.js); limits are the core's own
   * @param {import('./guard').FrameGuard} guard the core's guard, which sees every byte first
   */
  constructor({ handle, sink, log, pauseInput = () => {}, resumeInput = () => {},
    maxLanes = DEFAULT_MAX_LANES, preferredLanes = null, inFlight = null, logFormat = 'text' }, guard) {
    this.guard = guard;
    this.handle = handle;
    this.sink = sink;
    this.log = log;
    this.pauseInput = pauseInput;
    this.resumeInput = resumeInput;
    this.maxLanes = maxLanes;
    this.preferredLanes = preferredLanes; // answered to an offer of lanes only (§2.5)
    this.inFlight = inFlight;
    this.logFormat = logFormat;

    this.current = null; // the last exchange whose head was read
    this.inputEnded = false; // EOF between requests (§9.4)
    this.failure = null; // the framing error that stops the connection
    this.failedExchange = null; // the exchange whose request body it broke, if any
    this.pendingFailure = null; // one found by the guard, waiting for the parser to catch up
    this.refused = false; // a refused handshake (§3.4): the whole worker stops
    this.stopped = false;
  }

  /** Whether input is still taken: not after a framing error, found or pending, nor once stopped. */
  get takesInput() {
    return this.failure === null && this.pendingFailure === null && !this.stopped;
  }

  /** The request pipe reached EOF (PROTOCOL.md §9.4). */
  end() {
    if (!this.takesInput) return;
    const error = this.guard.end();
    if (error) {
      this._failAfterParsed(error);
      return;
    }
    this.inputEnded = true;
    this._maybeFinish();
  }

  /**
   * Bytes to the sink. Returns false when the sink wants the writer to wait for its onDrain
   * callback (a lane's writer that holds too much).
   */
  _output(chunk) {
    if (this.stopped) return true; // a response abandoned by §8.3 or §8.8
    try {
      return this.sink.write(chunk) !== false;
    } catch (err) {
      this._sinkFailed(err);
      return true;
    }
  }

  /** The sink threw: the response pipe is broken, and the stream cannot go on. */
  _sinkFailed(err) {
    this._stop(1, `writing the response pipe: ${err.message}`);
  }

  /** The exchange's response is complete. */
  _finished(ex) {
    if (!this._closeExchange(ex)) return;
    ex.ctx._end();
    if (this.failure) {
      this._settleFailure();
      return;
    }
    this._nextRequest();
    this._maybeFinish();
  }

  // Nothing to parse on by default: http.Server reads on by itself.
  _nextRequest() {}

  // Nothing held back by default.
  _flushPending() {}

  /**
   * PROTOCOL.md §3.1, §3.2: the library answers the handshake itself (a repeated one with
   * its token, §3.5, §4.6). Returns the answer, or null once a refusal has been written:
   * §3.4, 400 version_mismatch listing the versions spoken, then exit non-zero, the whole
   * worker, whatever its lanes (§2.5).
   */
  _handshake(ex, offered) {
    const answer = answerHandshake(offered, ex.exchange, this.maxLanes, this.preferredLanes);
    if (answer.ok) return answer;
    this.log(answer.record);
    this.refused = true;
    this._writeErrorAndStop(answer.bytes);
    return null;
  }

  // PROTOCOL.md §8.3: the exception and its stack go to stderr in one write whose first
  // line names the request id; the client sees only the §8.1 body.
  _handlerFailed(ex, err) {
    if (this.stopped) return;
    this.log(handlerFailureRecord(ex.ctx.requestId, ex.method, ex.url, err));
    if (this.failure) return; // the framing error decides what the client gets
    if (ex.finished) return; // the response was already complete
    if (!ex.headSent) {
      this._answerHandlerError(ex);
      return;
    }
    // The head is out: the response must stay visibly incomplete (no last chunk, or short
    // of its Content-Length). Send what was already written, then stop.
    this._flushPending();
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
    this.log(framingRecord(error, this.failedExchange));
    this._settleFailure();
    this._holdInput();
  }

  // Once every response owed to an earlier request is out, answer the failure.
  _settleFailure() {
    if (this.stopped) return;
    const owner = this.failedExchange;
    if (this._owesEarlier(owner)) return;
    if (owner && owner.headSent) {
      // Its status is final: leave the response incomplete (§8.3, §8.8).
      this._flushPending();
      this._stop(1);
      return;
    }
    this._writeErrorAndStop(framingResponseBytes(this.failure, owner));
  }

  _writeErrorAndStop(bytes) {
    this._flushPending();
    this._output(bytes);
    this._stop(1);
  }

  /** A fault of this library's own (an exception where none may escape): stop. */
  _internalError(err) {
    this._stop(1, `internal error: ${err && err.stack ? err.stack : err}`);
  }

  _stop(code, reason) {
    if (this.stopped) return;
    this.stopped = true;
    if (reason) this.log(`afterburn: ${reason}\n`);
    this._halt();
    this.sink.end(code);
  }
}

module.exports = { Lifecycle };
