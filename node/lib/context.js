'use strict';

// What a handler learns about its request beyond HTTP: the request id (PROTOCOL.md §5.1)
// and the deadline (§5.2), which the watchdog sends as AfterBurn-Request-Id and
// AfterBurn-Timeout-Ms (the library removes both fields from what handlers see, §5.3, and
// exposes them here instead); with lanes, its cancellation (§2.5); a logger that tags
// each line with the request id; and, for the fetch style, whose undici Request normalises
// them, the request as sent (target, fields, trailers) and the response's trailers (§5.4).

const kContext = Symbol('afterburn.context');

// PROTOCOL.md §5.2: AfterBurn-Timeout-Ms may have any number of digits; a value past this
// (the most nanoseconds a signed 64-bit integer holds, in milliseconds) is taken as this, as
// every library does. Number() of a long digit string is Infinity.
const MAX_TIMEOUT_MS = 9223372036854;

// PROTOCOL.md §2.5, §8.6: the library's own cancellation fires this long after the deadline,
// so the watchdog's (its 504 at the deadline, then the cancel line with lanes) comes first and
// a handler sees one cancellation, not a race of two; the watchdog waits its cancel_grace
// (1 s by default) before any kill, so the handler still has time to clean up.
const CANCEL_AFTER_DEADLINE_MS = 50;

// The longest delay setTimeout keeps: a longer one fires after 1 ms, so a far deadline's
// timer is set in steps of at most this.
const MAX_TIMER_MS = 2 ** 31 - 1;

class DeadlineExceeded extends Error {
  constructor() {
    super('afterburn: the request deadline passed');
    this.name = 'TimeoutError';
  }
}

/** The reason ctx.signal carries when the watchdog cancelled the exchange (§2.5). */
class ExchangeCancelled extends Error {
  constructor() {
    super('afterburn: the watchdog cancelled the exchange');
    this.name = 'AbortError';
  }
}

// One write per record, so lines of concurrent requests never interleave (§9.5).
function writeStderr(text) {
  try {
    require('node:fs').writeSync(2, text);
  } catch {
    // stderr is gone; nothing left to tell
  }
}

class RequestContext {
  /**
   * @param {string} requestId
   * @param {number} timeoutMs AfterBurn-Timeout-Ms, or -1 without one
   * @param {number} headReadAt performance.now() when the head was read (§5.2)
   * @param {((text: string) => void) | null} [log] where log() writes (stderr by default)
   * @param {'text' | 'json'} [logFormat] AFTERBURN_LOG_FORMAT: log()'s lines as text or as
   *   JSON objects
   */
  constructor(requestId, timeoutMs, headReadAt, log = null, logFormat = 'text') {
    this.requestId = requestId;
    /** performance.now() milliseconds at the deadline, or null without one. */
    this.deadlineAt = timeoutMs >= 0 ? headReadAt + Math.min(timeoutMs, MAX_TIMEOUT_MS) : null;
    this._controller = null;
    this._timer = null;
    this._ended = false;
    this._cancelled = null; // the ExchangeCancelled, once the watchdog cancelled (§2.5)
    this._log = log;
    this._whenEnded = null; // called once by _end (lib/cancel.js: forget the token)
    this._jsonLog = logFormat === 'json';
    // The request as sent (set by the core that parsed it; see rawTarget, rawHeaders).
    this._target = '';
    this._fields = EMPTY_FIELDS; // [name, value, name, value...], as llhttp hands them over
    // Indexes in _fields of the §5.3 fields handlers do not see, or -1 (three numbers, not an
    // array: the fetch core makes a context per request and most never ask).
    this._omitA = -1;
    this._omitB = -1;
    this._omitC = -1;
    this._rawHeaders = null;
    this._trailerFields = null; // the request's trailer section, once its body has been read
    this._trailers = null;
    this._responseTrailers = null; // lib/trailers.js ResponseTrailers, on first addTrailers
    this._listenerResponse = null; // the ServerResponse of a listener-style request
  }

  /**
   * The request target exactly as it came in the request line (RFC 9112 §3.2): not
   * normalised, not decoded, `?` and all. request.url in the fetch style is the URL parser's
   * version of it.
   */
  get rawTarget() {
    return this._target;
  }

  /**
   * The request's fields as received, in order, repeated names kept apart: [name, value]
   * pairs, names as the client spelled them. Without AfterBurn-Request-Id,
   * AfterBurn-Timeout-Ms and AfterBurn-Exchange, which are the library's (§5.3).
   * @returns {[string, string][]}
   */
  get rawHeaders() {
    if (this._rawHeaders === null) this._rawHeaders = pairsOf(this._fields, this._omitA, this._omitB, this._omitC);
    return this._rawHeaders;
  }

  /**
   * The request's trailer fields (PROTOCOL.md §5.4, a chunked body's trailer section) as
   * [name, value] pairs in the order received; empty until the body has been read to its
   * end, and for a request without trailers.
   * @returns {[string, string][]}
   */
  get rawTrailers() {
    return this._trailerFields === null ? [] : pairsOf(this._trailerFields, -1, -1, -1);
  }

  /**
   * The request's trailer fields as a Headers (undici's: names lower case, repeated names
   * joined with ", "); empty until the body has been read to its end. A new Headers is
   * made once the trailers are there, so keep the one you read after the body.
   */
  get trailers() {
    const { Headers } = require('./undici').loadUndici();
    if (this._trailerFields === null) return new Headers();
    if (this._trailers === null) this._trailers = new Headers(this.rawTrailers);
    return this._trailers;
  }

  /**
   * Adds fields to the response's trailer section: a Headers, an object or [name, value]
   * pairs (in the listener style, the same as res.addTrailers with all of them so far). Trailers go out on a chunked response: one whose body is a stream,
   * or any body without a Content-Length of the handler's when trailers were added before
   * the response was returned (the library then sends it chunked). They can be added until
   * the body's stream ends (from its last pull, say, with a checksum of what was sent).
   * Names must be tokens, values field values; the watchdog drops fields that must not be
   * trailers (framing, routing, authentication, Content-*, RFC 9110 §6.5.1).
   */
  addTrailers(fields) {
    if (this._ended) throw new Error('afterburn: addTrailers after the response is complete');
    if (this._responseTrailers === null) {
      const { ResponseTrailers } = require('./trailers');
      this._responseTrailers = new ResponseTrailers();
    }
    this._responseTrailers.add(fields);
    // Listener style: Node's own, which keeps the last set it is given.
    if (this._listenerResponse !== null) this._listenerResponse.addTrailers(this._responseTrailers.pairs);
  }

  /**
   * Called by the core that parsed the request: the target and the fields as received,
   * [name, value, ...], with the indexes of up to three to leave out (or -1).
   */
  _setRequest(target, fields, omitA = -1, omitB = -1, omitC = -1) {
    this._target = target;
    this._fields = fields;
    this._omitA = omitA;
    this._omitB = omitB;
    this._omitC = omitC;
  }

  /** Called by the core once the request body was read to its end: its trailer section. */
  _setTrailers(fields) {
    this._trailerFields = fields;
    this._trailers = null;
  }

  /** The response trailers added so far, as [name, value] pairs. */
  get _responseTrailerPairs() {
    return this._responseTrailers === null ? EMPTY_FIELDS : this._responseTrailers.pairs;
  }

  /**
   * Writes one line (util.format of the arguments) to stderr as `[request id] text`, in one
   * write; every line of a multi-line text is tagged. With lanes (§2.5) several requests
   * are in flight at once: the tag tells whose line it is.
   */
  log(...args) {
    const text = require('node:util').format(...args);
    if (this._jsonLog) {
      // AFTERBURN_LOG_FORMAT=json: one JSON object on one line, the text whole in "msg"
      // (JSON escapes its newlines); the watchdog merges it into its own JSON line.
      (this._log ?? writeStderr)(`${JSON.stringify({ request_id: this.requestId, msg: text })}\n`);
      return;
    }
    const tag = `[${this.requestId}] `;
    (this._log ?? writeStderr)(`${tag}${text.replace(/\n/g, `\n${tag}`)}\n`);
  }

  /** Whether the watchdog set a deadline (§5.2: without AfterBurn-Timeout-Ms there is none). */
  get hasDeadline() {
    return this.deadlineAt !== null;
  }

  /** The deadline as a Date on the wall clock, or null; timeRemaining() is the exact figure. */
  get deadline() {
    if (this.deadlineAt === null) return null;
    return new Date(Date.now() + this.timeRemaining());
  }

  /** Milliseconds left before the deadline, never negative; Infinity without a deadline. */
  timeRemaining() {
    if (this.deadlineAt === null) return Infinity;
    return Math.max(0, this.deadlineAt - performance.now());
  }

  /**
   * An AbortSignal that aborts 50 ms after the deadline (with a TimeoutError), when the watchdog
   * cancels the exchange (with an AbortError, §2.5) and when the exchange ends. Made on
   * first use: most handlers never ask, and a timer per request is not free.
   */
  get signal() {
    if (this._controller === null) {
      this._controller = new AbortController();
      if (this._ended) {
        this._controller.abort(new Error('afterburn: the exchange has ended'));
      } else if (this._cancelled !== null) {
        this._controller.abort(this._cancelled);
      } else if (this.deadlineAt !== null) {
        this._armDeadline();
      }
    }
    return this._controller.signal;
  }

  /**
   * Sets the timer that aborts the signal CANCEL_AFTER_DEADLINE_MS after the deadline, a step
   * at a time if it is far.
   */
  _armDeadline() {
    const left = Math.max(0, this.deadlineAt + CANCEL_AFTER_DEADLINE_MS - performance.now());
    const fire = left > MAX_TIMER_MS ? () => this._armDeadline() : () => this._controller.abort(new DeadlineExceeded());
    this._timer = setTimeout(fire, Math.min(left, MAX_TIMER_MS));
    this._timer.unref();
  }

  /**
   * Called by the library when the watchdog cancels the exchange (§2.5): the signal aborts
   * now, or at once when first asked for. Nothing after the exchange's end.
   */
  _cancel() {
    if (this._ended || this._cancelled !== null) return;
    this._cancelled = new ExchangeCancelled();
    if (this._controller === null) return;
    if (this._timer !== null) clearTimeout(this._timer);
    if (!this._controller.signal.aborted) this._controller.abort(this._cancelled);
  }

  /** Called by the library when the response is complete. */
  _end() {
    if (this._ended) return;
    this._ended = true;
    if (this._whenEnded !== null) this._whenEnded();
    if (this._timer !== null) clearTimeout(this._timer);
    if (this._controller !== null && !this._controller.signal.aborted) {
      this._controller.abort(new Error('afterburn: the exchange has ended'));
    }
  }
}

const EMPTY_FIELDS = Object.freeze([]);

// [name, value] pairs of a flat [name, value, name, value...] list, leaving out the entries
// at indexes omitA, omitB and omitC (each -1 for none).
function pairsOf(flat, omitA, omitB, omitC) {
  const out = [];
  for (let i = 0; i < flat.length; i += 2) {
    if (i !== omitA && i !== omitB && i !== omitC) out.push([flat[i], flat[i + 1]]);
  }
  return out;
}

/**
 * A request id as the watchdog makes one: 128 random bits as 32 lower-case hex digits
 * (PROTOCOL.md §5.1). Used under a legacy watchdog that sends none (§11.1).
 */
function newRequestId() {
  return require('node:crypto').randomBytes(16).toString('hex'); // loaded only if needed
}

module.exports = { RequestContext, ExchangeCancelled, newRequestId, kContext, CANCEL_AFTER_DEADLINE_MS };
