'use strict';

// The cancel pipe of PROTOCOL.md §2.5, without I/O: the lines the watchdog writes to it, and
// the exchanges in flight that a line may name.
//
// When an exchange passes its deadline the watchdog writes `cancel TOKEN\n`, TOKEN being the
// exchange's AfterBurn-Exchange value (§4.6), in one write. The library fires that
// exchange's cancellation (ctx.signal) if it is still carrying it, and ignores a token it does
// not carry (the response may have crossed the line) and any other line. Tokens are never
// reused by a watchdog, so a token names one exchange, on whichever lane it runs; an
// exchange is forgotten when its response is complete, so a cancellation cannot reach the
// lane's next exchange.
//
// The lanes and the cancel pipe are separate pipes: when the event loop was busy (a
// CPU-bound handler), the cancel line of an exchange may be read before that exchange's
// head. So a token no exchange carries is remembered for a while: if its head turns up, the
// exchange starts cancelled. A token whose response crossed the line never turns up again
// (the watchdog never reuses one), so remembering it cancels nothing else.

const TOKEN = /^cancel ([0-9A-Za-z]{1,64})$/;
// The longest line worth keeping: `cancel ` and a 64-character token. A longer one is no
// cancellation; it is dropped up to its end rather than held.
const MAX_LINE = 7 + 64;
// How many unknown tokens are remembered: far more than cancel lines that can be waiting for
// their heads at once, a few tens of kilobytes at most.
const MAX_UNKNOWN = 1024;

/** Splits the cancel pipe's bytes into lines and picks out the tokens of `cancel TOKEN`. */
class CancelLines {
  constructor() {
    this.partial = '';
    this.skipping = false; // inside a line too long to be one
  }

  /**
   * @param {Uint8Array} chunk bytes read from the cancel pipe
   * @returns {string[]} the tokens of the complete `cancel TOKEN` lines in it, in order
   */
  push(chunk) {
    const tokens = [];
    let text = Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength).toString('latin1');
    for (let nl = text.indexOf('\n'); nl >= 0; nl = text.indexOf('\n')) {
      const line = this.partial + text.slice(0, nl);
      text = text.slice(nl + 1);
      this.partial = '';
      if (this.skipping) {
        this.skipping = false;
        continue;
      }
      const m = TOKEN.exec(line);
      if (m) tokens.push(m[1]);
    }
    if (!this.skipping) {
      this.partial += text;
      if (this.partial.length > MAX_LINE) {
        this.partial = '';
        this.skipping = true;
      }
    }
    return tokens;
  }
}

/** The exchanges in flight on every lane, by token (§4.6), for the cancel pipe. */
class InFlight {
  constructor() {
    this.byToken = new Map();
    this.unknown = new Set(); // tokens cancelled before any exchange carried them, oldest first
  }

  /**
   * Tracks an exchange until its context ends (RequestContext._end); one whose cancel line
   * came before its head is cancelled at once.
   */
  add(token, ctx) {
    this.byToken.set(token, ctx);
    ctx._whenEnded = () => {
      if (this.byToken.get(token) === ctx) this.byToken.delete(token);
    };
    if (this.unknown.size > 0 && this.unknown.delete(token)) ctx._cancel();
  }

  /** Fires the cancellation of the exchange with this token; false when none carries it. */
  cancel(token) {
    const ctx = this.byToken.get(token);
    if (ctx === undefined) {
      this.unknown.add(token);
      if (this.unknown.size > MAX_UNKNOWN) this.unknown.delete(this.unknown.values().next().value);
      return false;
    }
    ctx._cancel();
    return true;
  }

  get size() {
    return this.byToken.size;
  }
}

module.exports = { CancelLines, InFlight };
