'use strict';

// PROTOCOL.md §5.3: the watchdog's own fields in a request head, read the same way by both
// cores (connection.js for listeners, fetch-request.js for fetch-style handlers):
// AfterBurn-Request-Id and AfterBurn-Timeout-Ms are exposed through the context, not as
// fields; AfterBurn-Exchange is kept with the exchange, for its response (§4.6), and exposed
// nowhere; AfterBurn-Handshake marks the handshake (§3.1). The same pass notes Host and how
// the body is framed, which the fetch core needs to make its Request.
//
// The watchdog sends each of the three fields once, so a head is left as it is, with the
// (at most three) indexes of those fields to leave out; a copy without them is made only
// for a head that repeats one. The guard has checked every value read here (rules 6 to 8,
// 13, 14), so none is checked again.

/**
 * One pass over a head's fields.
 * @param {string[]} headers the fields as [name, value, name, value...], as llhttp gives them
 * @returns {{requestId: string | null, timeoutMs: number, exchange: string | null,
 *   handshake: string | null, host: string | null, framed: boolean, direct: boolean,
 *   omitA: number, omitB: number, omitC: number, kept: string[] | null}} the first
 *   AfterBurn-Request-Id, AfterBurn-Timeout-Ms (-1 for none), AfterBurn-Exchange and
 *   AfterBurn-Handshake, and the first Host; framed: a body follows (chunked, or a
 *   Content-Length other than 0); direct: it is a Content-Length body; omitA, omitB, omitC:
 *   the indexes in headers of the §5.3 fields, or -1, unless kept is the fields without them
 */
function readMetadata(headers) {
  let requestId = null;
  let timeoutMs = -1;
  let exchange = null;
  let handshake = null;
  let host = null;
  let framed = false;
  let direct = false;
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
  return { requestId, timeoutMs, exchange, handshake, host, framed, direct, omitA, omitB, omitC, kept };
}

/**
 * The head's fields without the §5.3 ones, as a list of their own when it had any.
 * @param {string[]} headers the fields readMetadata read
 * @param {ReturnType<typeof readMetadata>} metadata what it found in them
 */
function withoutMetadata(headers, metadata) {
  if (metadata.kept !== null) return metadata.kept;
  if (metadata.omitA < 0) return headers;
  return withoutFields(headers, headers.length, metadata.omitA, metadata.omitB, metadata.omitC);
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
// (each -1 or an index below upTo).
function withoutFields(headers, upTo, omitA, omitB, omitC) {
  const kept = [];
  for (let i = 0; i < upTo; i += 2) {
    if (i !== omitA && i !== omitB && i !== omitC) kept.push(headers[i], headers[i + 1]);
  }
  return kept;
}

module.exports = { readMetadata, withoutMetadata };
