'use strict';

// The framing marks of the fetch core (fetch-connection.js): which bytes the guard passed are
// a Content-Length body, which go to llhttp, and where each message ends. The core queues the
// bytes by these marks and hands llhttp one message at a time (§2.1); a Content-Length body
// goes to the handler as it is, not through llhttp (fetch-request.js).
//
// The marks are made from what the FrameGuard (guard.js) finds as it checks, so the message
// structure is followed once: the Framer is the guard's parts observer, and its write() is the
// guard's, marks added. The listener core (connection.js) needs no marks and has a guard alone.

const { FrameGuard } = require('./guard');

// The kinds of write()'s marks.
const MARK_BODY = 1;
const MARK_END = 2;

class Framer {
  /** @param {{maxHead: number, maxBody: number}} limits as the FrameGuard's */
  constructor(limits) {
    this.guard = new FrameGuard(limits, this);
    this.marks = null; // write()'s marks
    this.marked = 0; // the offset of the last mark
  }

  /**
   * The guard's write(chunk), with the passed bytes described in `marks` as pairs
   * (offset, kind): the bytes from the previous offset (or 0) up to this one are kind
   * MARK_BODY (a Content-Length body) or not (message heads, chunked bodies, trailers), and
   * MARK_END is set when a message ends at the offset. The last pair ends at `pass`.
   * @param {Uint8Array} chunk
   * @param {number[]} marks
   * @returns {{pass: number, error: import('./errors').ProtocolError | null}}
   */
  write(chunk, marks) {
    this.marks = marks;
    this.marked = 0;
    const result = this.guard.write(chunk);
    this._mark(result.pass, 0);
    this.marks = null;
    return result;
  }

  /** (The guard's parts observer.) A head ends at `at`, and a Content-Length body follows. */
  onHead(at) {
    this._mark(at, 0);
  }

  /** The body's bytes passed so far end at `at`; `last`: they end the body. */
  onBody(at, last) {
    this._mark(at, last ? MARK_BODY | MARK_END : MARK_BODY);
  }

  /** A message ends at `at`. */
  onMessageEnd(at) {
    this._mark(at, MARK_END);
  }

  // The bytes since the last mark, up to offset, are of this kind.
  _mark(offset, kind) {
    if (this.marks === null || (offset <= this.marked && (kind & MARK_END) === 0)) return;
    this.marks.push(offset, kind);
    this.marked = offset;
  }
}

module.exports = { Framer, MARK_BODY, MARK_END };
