'use strict';

// Reads back the HTTP/1.1 responses a Connection wrote, as the watchdog would: for the
// in-process test helper (testing.js) and the library's own tests. It trusts its input
// more than a watchdog may (it reads what this library wrote) but still reports a
// response that ends early as incomplete (PROTOCOL.md §8.3).

/**
 * @typedef {object} ParsedResponse
 * @property {number} status
 * @property {string} statusText
 * @property {[string, string][]} headers field lines in order, names lower-cased
 * @property {[string, string][]} trailers
 * @property {Buffer} body de-chunked
 * @property {boolean} chunked
 * @property {boolean} complete false when the bytes ended inside the response
 */

/**
 * @param {Buffer} bytes
 * @param {{bodyless?: (index: number) => boolean}} [options] which responses answer a
 *   HEAD request and so have no body whatever their fields say (RFC 9112 §6.3)
 * @returns {{responses: ParsedResponse[], rest: Buffer}}
 */
function readResponses(bytes, options = {}) {
  const bodyless = options.bodyless || (() => false);
  const responses = [];
  let pos = 0;
  while (pos < bytes.length) {
    const headEnd = bytes.indexOf('\r\n\r\n', pos, 'latin1');
    if (headEnd < 0) break;
    const lines = bytes.toString('latin1', pos, headEnd).split('\r\n');
    const m = /^HTTP\/1\.1 (\d{3}) ?(.*)$/.exec(lines[0]);
    if (!m) break;
    const res = {
      status: Number(m[1]),
      statusText: m[2],
      headers: [],
      trailers: [],
      body: Buffer.alloc(0),
      chunked: false,
      complete: true,
    };
    for (const line of lines.slice(1)) {
      const colon = line.indexOf(':');
      res.headers.push([line.slice(0, colon).toLowerCase(), line.slice(colon + 1).trim()]);
    }
    pos = headEnd + 4;
    const get = (name) => res.headers.find(([n]) => n === name)?.[1];
    const noBody = bodyless(responses.length) || res.status === 204 || res.status === 304 ||
      (res.status >= 100 && res.status < 200);
    if (noBody) {
      // nothing
    } else if ((get('transfer-encoding') || '').toLowerCase() === 'chunked') {
      res.chunked = true;
      const parts = [];
      for (;;) {
        const lineEnd = bytes.indexOf('\r\n', pos, 'latin1');
        if (lineEnd < 0) {
          res.complete = false;
          break;
        }
        const size = parseInt(bytes.toString('latin1', pos, lineEnd), 16);
        pos = lineEnd + 2;
        if (size === 0) {
          const end = bytes.indexOf('\r\n\r\n', pos - 2, 'latin1');
          if (end < 0) {
            res.complete = false;
            break;
          }
          for (const line of bytes.toString('latin1', pos, end).split('\r\n')) {
            if (line === '') continue;
            const colon = line.indexOf(':');
            res.trailers.push([line.slice(0, colon).toLowerCase(), line.slice(colon + 1).trim()]);
          }
          pos = end + 4;
          break;
        }
        if (pos + size + 2 > bytes.length) {
          parts.push(bytes.subarray(pos, Math.min(bytes.length, pos + size)));
          pos = bytes.length;
          res.complete = false;
          break;
        }
        parts.push(bytes.subarray(pos, pos + size));
        pos += size + 2;
      }
      res.body = Buffer.concat(parts);
    } else if (get('content-length') !== undefined) {
      const len = Number(get('content-length'));
      res.body = bytes.subarray(pos, Math.min(bytes.length, pos + len));
      if (pos + len > bytes.length) res.complete = false;
      pos = Math.min(bytes.length, pos + len);
    }
    responses.push(res);
    if (!res.complete) break;
  }
  return { responses, rest: bytes.subarray(pos) };
}

module.exports = { readResponses };
