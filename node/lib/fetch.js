'use strict';

// Fetch-style handlers: (request, ctx) => Response, on undici's Request, Response and
// Headers. undici is loaded here only, so a listener-style worker never pays for it.
//
// The request body streams to the handler as the watchdog writes it (§6.1); a response
// body streams back, each chunk written to the pipe as the handler's stream yields it, so
// server-sent events and token streams flow. A body that ends together with its first
// chunk (a string, a buffer) is sent with Content-Length instead of chunked.

const { setImmediate: nextMacrotask } = require('node:timers/promises');
const { isDisturbed } = require('node:stream');

const BODYLESS_METHODS = new Set(['GET', 'HEAD']);

let undici = null;

/**
 * undici's web classes. Its fetch modules are loaded on their own when the installed undici
 * has them where undici 7 keeps them: the whole package (dispatchers, the HTTP client and
 * its WebAssembly parser) costs about three times as much at start-up, and a worker needs
 * none of it to serve. The classes are the same objects either way.
 */
function loadUndici() {
  if (undici !== null) return undici;
  try {
    // In the order undici's index.js loads them: a module's WebIDL converters capture
    // the converters of the modules loaded before it.
    const { Headers } = require('undici/lib/web/fetch/headers.js');
    const { Response, getResponseState } = require('undici/lib/web/fetch/response.js');
    const { Request } = require('undici/lib/web/fetch/request.js');
    const { FormData } = require('undici/lib/web/fetch/formdata.js');
    if ([Request, Response, Headers, FormData].every((c) => typeof c === 'function')) {
      undici = { Request, Response, Headers, FormData, getResponseState };
      return undici;
    }
  } catch {
    // another layout: the package's entry point has them all
  }
  const all = require('undici');
  undici = { Request: all.Request, Response: all.Response, Headers: all.Headers, FormData: all.FormData, getResponseState: null };
  return undici;
}

/**
 * The bytes of a body made from a string or a buffer, without reading its stream: for an
 * undici Response whose stream nobody has touched, the source it was made from.
 */
function knownBytes(response) {
  const { Response, getResponseState } = undici;
  if (typeof getResponseState !== 'function' || !(response instanceof Response)) return null;
  const body = getResponseState(response).body;
  if (!body || body.stream.locked || isDisturbed(body.stream)) return null;
  const { source } = body;
  if (typeof source === 'string') return Buffer.from(source);
  if (source instanceof Uint8Array) return source;
  return null;
}

/** The URL of the request: the raw target on the request's own Host. */
function requestURL(req) {
  const target = req.url;
  if (target[0] !== '/') return target; // absolute-form (RFC 9112 §3.2.2)
  // Concatenated, not resolved: a target such as //x/y is a path here, not an authority.
  const host = req.headers.host;
  if (host) {
    try {
      return new URL(`http://${host}${target}`).href;
    } catch {
      // a Host that is no URL authority; fall through
    }
  }
  return new URL(`http://afterburn.invalid${target}`).href;
}

function toRequest(req) {
  const { Request } = loadUndici();
  const headers = [];
  const raw = req.rawHeaders;
  for (let i = 0; i < raw.length; i += 2) headers.push([raw[i], raw[i + 1]]);
  const init = { method: req.method, headers };
  const hasBody = req.headers['transfer-encoding'] !== undefined ||
    (req.headers['content-length'] !== undefined && req.headers['content-length'] !== '0');
  if (hasBody && !BODYLESS_METHODS.has(req.method)) {
    init.body = req; // an async iterable of Buffers, streamed (§6.1)
    init.duplex = 'half';
  }
  return new Request(requestURL(req), init);
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

async function writeResponse(response, res) {
  if (!isResponseLike(response)) {
    throw new TypeError(`afterburn: the handler returned ${describe(response)}, not a Response`);
  }
  const status = response.status;
  const fields = [];
  let hasLength = false;
  // Iteration yields each Set-Cookie on its own and joins other repeated names (Fetch).
  for (const [name, value] of response.headers) {
    fields.push(name, value);
    if (name === 'content-length') hasLength = true;
  }
  const reason = response.statusText || undefined;
  // Node decides the framing when the head is written: a body whose length is known
  // gets Content-Length (never on 204 and 304, RFC 9110 §8.6), any other is chunked.
  const writeHead = (length) => {
    if (length !== null && !hasLength && status !== 204 && status !== 304) fields.push('content-length', String(length));
    res.writeHead(status, reason, fields);
  };
  const body = response.body;
  if (body === null) {
    writeHead(0);
    res.end();
    return;
  }
  const bytes = knownBytes(response);
  if (bytes !== null) {
    writeHead(bytes.byteLength);
    res.end(bytes);
    return;
  }
  const reader = body.getReader();
  try {
    const first = await reader.read();
    if (first.done) {
      writeHead(0);
      res.end();
      return;
    }
    let pending = reader.read();
    const settled = await Promise.race([pending, nextMacrotask(undefined)]);
    if (settled !== undefined && settled.done) {
      writeHead(first.value.byteLength); // the whole body was there at once
      res.end(first.value);
      return;
    }
    writeHead(null);
    res.write(first.value);
    for (;;) {
      const next = await pending;
      if (next.done) break;
      res.write(next.value); // written to the pipe now: a chunk per read (§6.1)
      pending = reader.read();
    }
    res.end();
  } catch (err) {
    reader.cancel(err).catch(() => {});
    throw err;
  }
}

/** Adapts a fetch-style handler to the (req, res, ctx) shape of a Connection. */
function fetchHandler(handler) {
  if (typeof handler !== 'function') throw new TypeError('afterburn: serve(handler) needs a function');
  loadUndici(); // at start-up, before the handshake: init is done before ready (§3.1)
  return async function handleFetch(req, res, ctx) {
    const response = await handler(toRequest(req), ctx);
    await writeResponse(response, res);
  };
}

module.exports = { fetchHandler, toRequest, writeResponse, loadUndici };
