'use strict';

// What a handler learns about its request beyond HTTP: the request id (PROTOCOL.md §5.1)
// and the deadline (§5.2), which the watchdog sends as AfterBurn-Request-Id and
// AfterBurn-Timeout-Ms (the library removes both fields from what handlers see, §5.3, and
// exposes them here instead); with lanes, its cancellation (§2.5); and a logger that tags
// each line with the request id.

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
   */
  constructor(requestId, timeoutMs, headReadAt, log = null) {
    this.requestId = requestId;
    /** performance.now() milliseconds at the deadline, or null without one. */
    this.deadlineAt = timeoutMs >= 0 ? headReadAt + Math.min(timeoutMs, MAX_TIMEOUT_MS) : null;
    this._controller = null;
    this._timer = null;
    this._ended = false;
    this._cancelled = null; // the ExchangeCancelled, once the watchdog cancelled (§2.5)
    this._log = log;
    this._whenEnded = null; // called once by _end (lib/cancel.js: forget the token)
  }

  /**
   * Writes one line (util.format of the arguments) to stderr as `[request id] text`, in one
   * write; every line of a multi-line text is tagged. With lanes (§2.5) several requests
   * are in flight at once: the tag tells whose line it is.
   */
  log(...args) {
    const tag = `[${this.requestId}] `;
    const text = require('node:util').format(...args);
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

/**
 * A request id as the watchdog makes one: 128 random bits as 32 lower-case hex digits
 * (PROTOCOL.md §5.1). Used under a legacy watchdog that sends none (§11.1).
 */
function newRequestId() {
  return require('node:crypto').randomBytes(16).toString('hex'); // loaded only if needed
}

module.exports = { RequestContext, ExchangeCancelled, newRequestId, kContext, CANCEL_AFTER_DEADLINE_MS };
