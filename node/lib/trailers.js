'use strict';

// Response trailers of the fetch style (PROTOCOL.md §5.4, RFC 9112 §7.1.2): the fields a
// handler adds with ctx.addTrailers, checked as it adds them, and the last chunk of a chunked
// body that carries them. The listener style has Node's own res.addTrailers.
//
// Which fields may be trailers is the watchdog's to enforce (it drops framing, routing,
// authentication, Content-* and AfterBurn-* fields, RFC 9110 §6.5.1); the library only
// refuses what cannot be written at all: a name that is no token, a value with CR, LF or
// NUL. It drops Transfer-Encoding, Content-Length and AfterBurn-Exchange at once, which
// would break the framing or the exchange (§4.6) if they reached the pipe.

// RFC 9110 §5.6.2 token, §5.5 field-value.
const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
const FIELD_VALUE = /^[\t\x20-\x7e\x80-\xff]*$/;
const NEVER = new Set(['transfer-encoding', 'content-length', 'afterburn-exchange']);

class ResponseTrailers {
  constructor() {
    /** @type {[string, string][]} */
    this.pairs = [];
  }

  /**
   * @param {Iterable<[string, string]> | Record<string, string | string[]>} fields a Headers
   *   (or anything iterable over [name, value]), or an object of names to a value or values
   */
  add(fields) {
    if (fields === null || typeof fields !== 'object') {
      throw new TypeError('afterburn: addTrailers takes a Headers, an object or [name, value] pairs');
    }
    const added = [];
    const iterable = typeof fields[Symbol.iterator] === 'function';
    const entries = iterable ? fields : Object.entries(fields);
    for (const entry of entries) {
      if (!Array.isArray(entry) || entry.length !== 2) {
        throw new TypeError('afterburn: addTrailers takes [name, value] pairs');
      }
      const [name, value] = entry;
      for (const v of !iterable && Array.isArray(value) ? value : [value]) added.push(checked(name, v));
    }
    for (const pair of added) if (!NEVER.has(pair[0].toLowerCase())) this.pairs.push(pair);
  }

  /** The trailer section as head lines, each with its CRLF. */
  lines() {
    let text = '';
    for (const [name, value] of this.pairs) text += `${name}: ${value}\r\n`;
    return text;
  }
}

function checked(name, value) {
  const n = String(name);
  const v = String(value).trim();
  if (!TOKEN.test(n)) throw new TypeError(`afterburn: ${JSON.stringify(n)} is no field name (addTrailers)`);
  if (!FIELD_VALUE.test(v)) throw new TypeError(`afterburn: the trailer ${n} has a value with CR, LF or NUL`);
  return [n, v];
}

/** The last chunk of a chunked body (RFC 9112 §7.1), with the trailer section's lines. */
function lastChunk(trailerLines) {
  return `0\r\n${trailerLines}\r\n`;
}

module.exports = { ResponseTrailers, lastChunk };
