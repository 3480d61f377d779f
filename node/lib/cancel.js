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

const TOKEN = /^cancel ([0-9A-Za-z]{1,64})$/;
// The longest line worth keeping: `cancel ` and a 64-character token. A longer one is no
// cancellation; it is dropped up to its end rather than held.
const MAX_LINE = 7 + 64;

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
  }

  /** Tracks an exchange until its context ends (RequestContext._end). */
  add(token, ctx) {
    this.byToken.set(token, ctx);
    ctx._whenEnded = () => {
      if (this.byToken.get(token) === ctx) this.byToken.delete(token);
    };
  }

  /** Fires the cancellation of the exchange with this token; false when none carries it. */
  cancel(token) {
    const ctx = this.byToken.get(token);
    if (ctx === undefined) return false;
    ctx._cancel();
    return true;
  }

  get size() {
    return this.byToken.size;
  }
}

module.exports = { CancelLines, InFlight };
