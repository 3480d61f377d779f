'use strict';

// The undici side of fetch-style handlers: making the Request a handler gets from what the
// parser saw, and reading back the Response it returns as a status, fields and a body.
// undici itself is loaded by undici.js, when a fetch-style worker starts or something asks.
//
// Both directions take undici's shortcuts where the installed undici has them (undici 7's
// own internal entry points, the ones its fetch() uses): a Request is made from an inner
// request whose header list is filled straight from the parser's fields, which llhttp has
// already validated, instead of passing every field through WebIDL conversion and
// validation again; a Response of this package's undici is read from its inner state
// instead of through its getters. Where an undici does not have them, the public
// constructors and getters do the same work more slowly (useInternals(false) in tests).
// With them, bodies that are there at once make no ReadableStream unless one is asked for
// (lib/known-body.js): the package's Response, and a request body that came with its head.

const { isDisturbed } = require('node:stream');
const { STATUS_CODES } = require('node:http');
const { KnownBody, InHandBody } = require('./known-body');
const { loadUndici } = require('./undici');

/**
 * What both fetch cores do with serve(handler)'s handler at start-up: check it, and load
 * undici before the handshake, so init is done before ready (§3.1).
 */
function startFetchHandler(handle) {
  if (typeof handle !== 'function') throw new TypeError('afterburn: serve(handler) needs a function');
  loadUndici();
}

/**
 * The URL of a request: the raw target on the request's own Host (§4.2), as one string.
 * Concatenated, not resolved: a target such as //x/y is a path here, not an authority.
 * @returns {URL}
 */
function requestURL(target, host) {
  // The URL of the last request again, for the same target on the same Host: a URL in a
  // Request is never changed (undici copies one before it changes anything), so requests
  // can share it, and parsing it again costs as much as the rest of the Request.
  if (target === last.target && host === last.host) return last.url;
  const url = parseRequestURL(target, host);
  last.target = target;
  last.host = host;
  last.url = url;
  return url;
}

const last = { target: null, host: null, url: null };

function parseRequestURL(target, host) {
  if (target[0] !== '/') {
    // absolute-form (RFC 9112 §3.2.2), or the asterisk-form of OPTIONS
    try {
      return new URL(target);
    } catch {
      return new URL(`http://afterburn.invalid/${target === '*' ? '' : target}`);
    }
  }
  if (host) {
    try {
      return new URL(`http://${host}${target}`);
    } catch {
      // a Host that is no URL authority; fall through
    }
  }
  return new URL(`http://afterburn.invalid${target}`);
}

/**
 * Makes the undici Request a handler gets.
 * @param {string} method as llhttp parsed it (one of its known methods, upper case)
 * @param {URL} url
 * @param {string[]} raw the fields as [name, value, name, value...]
 * @param {ReadableStream | InHandBody | null} body the request body: a stream, the whole
 *   body in hand (lib/known-body.js), or null for none
 * @param {number} [omitA] the index in raw of a field to leave out (AfterBurn-Request-Id,
 *   AfterBurn-Timeout-Ms or AfterBurn-Exchange, §5.3), or -1
 * @param {number} [omitB] another, or -1
 * @param {number} [omitC] a third, or -1
 */
function makeRequest(method, url, raw, body, omitA = -1, omitB = -1, omitC = -1) {
  const u = loadUndici();
  const fast = u.fast;
  if (fast !== null) {
    // What `new Request(url, {method, headers, body, duplex: 'half'})` makes, without
    // converting and validating the fields a second time: llhttp took only tokens as
    // names and values without CR, LF or NUL, trimmed (rules 3 to 5).
    const inner = fast.makeRequest({ method, urlList: [url], mode: 'cors', client: fast.settings });
    const list = inner.headersList;
    for (let i = 0; i < raw.length; i += 2) {
      if (i !== omitA && i !== omitB && i !== omitC) list.append(raw[i], raw[i + 1], false);
    }
    if (body !== null) inner.body = body instanceof InHandBody ? body : { stream: body, source: null, length: null };
    const request = fast.fromInnerRequest(inner, undefined, undefined, 'request');
    // undici's Request, with a signal made on first use and a body in hand read directly.
    Object.setPrototypeOf(request, fast.Request.prototype);
    return request;
  }
  const headers = [];
  for (let i = 0; i < raw.length; i += 2) {
    if (i !== omitA && i !== omitB && i !== omitC) headers.push([raw[i], raw[i + 1]]);
  }
  const init = { method, headers };
  if (body !== null) {
    init.body = body instanceof InHandBody ? body.stream : body;
    init.duplex = 'half';
  }
  return new u.Request(url.href, init);
}

// Request body bytes queued for the handler before the input pauses.
const BODY_HIGH_WATER_MARK = 128 * 1024;

/**
 * A streamed request body, a ReadableStream of Buffers from `source` (start, pull, cancel),
 * whose back-pressure pauses the input once BODY_HIGH_WATER_MARK bytes wait in it. The
 * stream of both fetch cores (fetch-request.js, fetch-listener.js).
 */
function requestBodyStream(source) {
  return new ReadableStream(source, { highWaterMark: BODY_HIGH_WATER_MARK, size: (chunk) => chunk.byteLength });
}

/** A Response from undici or from Node's own copy (the globals): anything shaped like one. */
function isResponseLike(value) {
  return value !== null && typeof value === 'object' && Number.isInteger(value.status) &&
    value.headers && typeof value.headers[Symbol.iterator] === 'function' && 'body' in value;
}

function describe(value) {
  if (value === null) return 'null';
  if (typeof value !== 'object') return typeof value;
  return value.constructor ? `a ${value.constructor.name}` : 'an object';
}

// RFC 9110 §5.6.2 token and §5.5 field-value, for Responses that are not undici's (whose
// Headers have already checked both).
const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
const FIELD_VALUE = /^[\t\x20-\x7e\x80-\xff]*$/;
const LENGTH = /^[0-9]{1,15}$/;

/**
 * What the handler's Response says: status, reason, its fields as the lines of a head, the
 * Content-Length it set itself, and its body either as bytes known at once (a string or
 * buffer source nobody has read) or as a stream. Transfer-Encoding is left out: the
 * framing is the library's (§4.4); so is AfterBurn-Exchange: the token is the request's,
 * which the library writes itself, and a handler's own would break the exchange (§4.6).
 * The reason is the Response's statusText, or the status's own phrase. Throws a TypeError
 * for what cannot be sent, a RangeError for a status outside 200 to 999 (§4.4). Both fetch
 * cores read the Response here (fetch-response.js, fetch-listener.js).
 * @returns {{status: number, reason: string, lines: string, length: number,
 *   bytes: Uint8Array | string | null, stream: ReadableStream | null}}
 */
function readResponse(response) {
  const r = responseParts(response);
  const { status } = r;
  if (!Number.isInteger(status) || status < 200 || status > 999) {
    throw new RangeError(`afterburn: the handler's Response has status ${status}; want 200 to 999 (§4.4)`);
  }
  r.reason = r.reason || STATUS_CODES[status] || 'unknown';
  return r;
}

// readResponse before the status is checked.
function responseParts(response) {
  const fast = loadUndici().fast;
  if (fast !== null && response instanceof fast.UndiciResponse) {
    const state = fast.getResponseState(response);
    const list = state.headersList;
    if (list && list.headersMap instanceof Map) {
      const out = { status: state.status, reason: state.statusText, lines: '', length: -1, bytes: null, stream: null };
      let lines = '';
      // Names as undici keeps them, lower case; values checked by its Headers already.
      for (const [name, entry] of list.headersMap) {
        if (name === 'set-cookie' && list.cookies) {
          for (const cookie of list.cookies) lines += `set-cookie: ${cookie}\r\n`; // one line each (Fetch)
          continue;
        }
        if (name === 'transfer-encoding' || name === 'afterburn-exchange') continue;
        if (name === 'content-length') out.length = contentLength(out.length, entry.value);
        lines += `${name}: ${entry.value}\r\n`;
      }
      out.lines = lines;
      const body = state.body;
      if (body instanceof KnownBody && body.untouched) {
        out.bytes = body.source; // no stream was ever made: nothing can have read it
      } else if (body) {
        const { source, stream } = body;
        if ((typeof source === 'string' || source instanceof Uint8Array) && !stream.locked && !isDisturbed(stream)) {
          out.bytes = source;
        } else {
          out.stream = stream;
        }
      }
      return out;
    }
  }
  if (!isResponseLike(response)) {
    throw new TypeError(`afterburn: the handler returned ${describe(response)}, not a Response`);
  }
  let lines = '';
  let length = -1;
  // Iteration yields each Set-Cookie on its own and joins other repeated names (Fetch).
  for (const [n, value] of response.headers) {
    const name = String(n).toLowerCase();
    if (!TOKEN.test(name) || !FIELD_VALUE.test(String(value))) {
      throw new TypeError(`afterburn: the handler's Response has an invalid field ${JSON.stringify(name)}`);
    }
    if (name === 'transfer-encoding' || name === 'afterburn-exchange') continue;
    if (name === 'content-length') length = contentLength(length, String(value));
    lines += `${name}: ${value}\r\n`;
  }
  return { status: response.status, reason: response.statusText, lines, length, bytes: null, stream: response.body };
}

/** §4.4: the response to a HEAD, and every 204 and 304, has no body. */
function bodyless(method, status) {
  return method === 'HEAD' || status === 204 || status === 304;
}

/**
 * A body known at once against the Content-Length the handler set (-1: none): throws a
 * TypeError when they differ.
 */
function checkKnownLength(declared, size) {
  if (declared >= 0 && declared !== size) {
    throw new TypeError(`afterburn: the handler's Response has Content-Length ${declared} and a body of ${size} bytes`);
  }
}

/**
 * A streamed body held to the Content-Length the handler set (§6.1): throws a RangeError
 * once the bytes sent so far are more, or, once the stream has ended, fewer.
 */
function checkStreamedLength(declared, sent, ended) {
  if (sent > declared) throw new RangeError(`afterburn: the body is longer than its Content-Length ${declared}`);
  if (ended && sent !== declared) {
    throw new RangeError(`afterburn: the body ended ${declared - sent} bytes short of its Content-Length`);
  }
}

function contentLength(seen, value) {
  if (seen >= 0 || !LENGTH.test(value)) {
    throw new TypeError(`afterburn: the handler's Response has Content-Length ${JSON.stringify(value)}`);
  }
  return Number(value);
}

// undici hands out Uint8Arrays; a handler's own stream may yield strings too.
function asBytes(value) {
  if (value instanceof Uint8Array) return value;
  if (typeof value === 'string') return Buffer.from(value, 'utf8');
  if (ArrayBuffer.isView(value)) return new Uint8Array(value.buffer, value.byteOffset, value.byteLength);
  if (value instanceof ArrayBuffer) return new Uint8Array(value);
  throw new TypeError(`afterburn: the response body stream yielded ${value === null ? 'null' : typeof value}, not bytes`);
}

// Resolves (with undefined) after the promise jobs queued now and the ones they queue in
// turn, without waiting for I/O as setImmediate would.
function nextTurn() {
  return new Promise((resolve) => queueMicrotask(() => queueMicrotask(() => queueMicrotask(resolve))));
}

module.exports = {
  startFetchHandler, requestURL, makeRequest, requestBodyStream, readResponse, bodyless, checkKnownLength,
  checkStreamedLength, isResponseLike, asBytes, nextTurn, InHandBody,
};
