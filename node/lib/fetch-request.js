'use strict';

// The request side of the fetch core (fetch-connection.js): llhttp (Node's own parser,
// driven directly) turns the bytes the FrameGuard passed into an exchange whose head goes to
// the connection to answer, and whose body goes to the handler's Request.
//
// llhttp's callbacks make the exchange: the head becomes the exchange record (§5.3's
// fields picked out by metadata.js) and the connection is called at once (its _start);
// body bytes go into the request's ReadableStream (made only for a request that has a
// body), whose back-pressure pauses the input; a body the handler leaves is dropped as it
// arrives (§6.3). A Content-Length body that came whole with its head (the watchdog writes
// a small one so, §6.1) goes to the Request as bytes, with no stream unless the handler asks
// for one (known-body.js). llhttp is done with a message at the end of its head when it
// reads no body of it (none, or a Content-Length one it is told to skip, whose end the
// framer marks); it says itself where a chunked body ends, and hands over the trailer
// section (§5.4).
//
// The functions take the connection first, as undici's client-h1.js takes its client: the
// request side's state (the exchange llhttp is on, the fields it hands over in pieces) is
// the connection's, which also owns the backlog of bytes the guard passed.

const { internalParser } = require('./http-parser');
const { MARK_BODY, MARK_END } = require('./framer');
const { RequestContext, newRequestId } = require('./context');
const { InHandBody, requestBodyStream } = require('./fetch');
const { readMetadata } = require('./metadata');
// The global `performance` is a lazy getter on Node 20: read it once here, not per request.
const { performance } = require('node:perf_hooks');

// Node's llhttp binding, from _http_common (lib/http-parser.js: this core is used only where
// that loads without a deprecation warning; lib/fetch-core.js picks the core).
const { HTTPParser, methods } = internalParser();
const { kOnMessageBegin, kOnHeaders, kOnHeadersComplete, kOnBody, kOnMessageComplete } = HTTPParser;

const EMPTY_LIST = Object.freeze([]);

/**
 * llhttp, set up to call into the connection. Returns the parser and the callback that is
 * its kOnMessageComplete only while it reads a body itself (chunked, see onHead).
 * @param {import('./fetch-connection').FetchConnection} conn
 * @param {{maxHead: number}} limits
 */
function llhttpParser(conn, limits) {
  const parser = new HTTPParser();
  // maxHeaderSize is a backstop: the guard counts first, in the spec's bytes (rule 11).
  parser.initialize(HTTPParser.REQUEST, {}, limits.maxHead, HTTPParser.kLenientNone);
  // Node's parser looks this callback up at the start of every message and calls it only
  // if it is a function. Not one, but the parser's own: the lookup of a slot it lacks
  // walks its prototype chain in C++, which costs a worker woken per request more than
  // anything it would do.
  parser[kOnMessageBegin] = null;
  parser[kOnHeaders] = (headers, url) => {
    for (let i = 0; i < headers.length; i++) conn.partHeaders.push(headers[i]);
    conn.partUrl += url;
  };
  // A Content-Length body does not go through llhttp: the framer has marked its bytes,
  // which go to the handler as they are, without a copy; llhttp is told the message has
  // no body (1: skip it, as for the response to a HEAD). No exception may escape into
  // llhttp: it would be this library's fault, and the stream cannot go on.
  parser[kOnHeadersComplete] = (major, minor, headers, method, url) => {
    try {
      return onHead(conn, headers, methods[method], url) ? 1 : 0;
    } catch (err) {
      conn._internalError(err);
      return 0;
    }
  };
  parser[kOnBody] = (bytes) => {
    try {
      onBody(conn, bytes);
    } catch (err) {
      conn._internalError(err);
    }
  };
  // Node's parser calls into JavaScript for kOnMessageComplete only when it is a function.
  const messageComplete = () => {
    parser[kOnMessageComplete] = null;
    try {
      onMessageComplete(conn);
    } catch (err) {
      conn._internalError(err);
    }
  };
  parser[kOnMessageComplete] = null;
  return { parser, messageComplete };
}

// llhttp has the head of a request: make the exchange and hand it to the connection.
// Returns whether the request has a Content-Length body, which llhttp is to skip.
function onHead(conn, headers, method, url) {
  if (headers === undefined) {
    headers = conn.partHeaders;
    conn.partHeaders = [];
  }
  if (url === undefined) {
    url = conn.partUrl;
    conn.partUrl = '';
  }
  const headReadAt = performance.now();

  // §5.3: the watchdog's fields are picked out (metadata.js); the Request gets the rest,
  // passed as they are with the indexes to leave out, or a copy without them.
  const { requestId, timeoutMs, exchange, handshake, host, framed, direct, omitA, omitB, omitC, kept } =
    readMetadata(headers);

  const ex = {
    method,
    url,
    // §11.1: a legacy watchdog sends no id; the library makes one.
    ctx: new RequestContext(requestId || newRequestId(), timeoutMs, headReadAt, conn.log, conn.logFormat),
    exchange, // the AfterBurn-Exchange token, echoed in the response head (§4.6), or null
    complete: false, // llhttp has read the whole request
    finished: false, // the response is complete
    headSent: false,
    body: null, // the ReadableStream controller of the request body
    bodyFull: false,
    abandoned: false, // the body is dropped as it arrives (§6.3)
    direct, // a Content-Length body, read here, not by llhttp
    directDone: false,
  };
  conn.current = ex;
  // §2.5: the cancel pipe names the exchange by its token.
  if (exchange !== null && handshake === null && conn.inFlight !== null) conn.inFlight.add(exchange, ex.ctx);
  if (kept !== null) conn._start(ex, handshake, kept, -1, -1, -1, host, framed);
  else conn._start(ex, handshake, headers, omitA, omitB, omitC, host, framed);
  if (framed && !direct) {
    // A chunked body: llhttp reads it and says when the message ends.
    conn.parser[kOnMessageComplete] = conn.llhttpMessageComplete;
  } else {
    // No body, or a Content-Length body llhttp is told to skip: llhttp ends the message
    // as soon as this returns, which needs no call back from it (a call from C++ into
    // JavaScript costs a worker woken per request a few microseconds).
    onMessageComplete(conn);
  }
  return direct;
}

/**
 * The body of the exchange's Request: the bytes in hand, a stream, or null for none.
 * §4.2: a request without Content-Length or Transfer-Encoding has an empty body; GET and
 * HEAD cannot carry one in a Request, so theirs is drained instead.
 * @param {boolean} framed the head announced a body (chunked, or a Content-Length above 0)
 * @returns {InHandBody | ReadableStream | null}
 */
function requestBody(conn, ex, framed) {
  if (framed && ex.method !== 'GET' && ex.method !== 'HEAD') return inHand(conn, ex) ?? bodyStream(conn, ex);
  ex.abandoned = true;
  return null;
}

// A Content-Length body that arrived whole with its head (the watchdog writes a small one
// with the head, §6.1) goes to the Request as it is, copied out of the read buffer, which
// is then free for the next read: no stream unless the handler asks for one
// (lib/known-body.js). Nothing is left to pause for or to drain (§6.3).
function inHand(conn, ex) {
  if (!ex.direct || conn.backlog.length === 0) return null;
  const [bytes, kind] = conn.backlog[0];
  if (kind !== (MARK_BODY | MARK_END)) return null;
  conn.backlog.shift();
  const copy = Buffer.allocUnsafeSlow(bytes.length);
  copy.set(bytes);
  ex.directDone = true;
  return new InHandBody(copy);
}

// The request body as a ReadableStream of Buffers; its back-pressure pauses the input.
function bodyStream(conn, ex) {
  return requestBodyStream({
    start: (controller) => {
      ex.body = controller;
    },
    pull: () => {
      if (!ex.bodyFull) return;
      ex.bodyFull = false;
      conn._updateFlow();
    },
    cancel: () => {
      // A handler that stops reading must not stop the stream: the rest is the
      // library's to drain (§6.3).
      abandonBody(conn, ex);
    },
  });
}

// Returns whether the bytes went to the handler (and so are referred to from now on).
function onBody(conn, bytes) {
  const ex = conn.current;
  if (ex === null || ex.abandoned || ex.body === null) return false;
  ex.body.enqueue(asBuffer(bytes)); // a streamed request body yields Buffers
  if (ex.body.desiredSize <= 0) ex.bodyFull = true;
  return true;
}

/** Bytes of a Content-Length body, marked as such by the framer; `ends`: its last ones. */
function directBody(conn, bytes, ends) {
  if (bytes.length > 0 && onBody(conn, bytes)) conn.retained = true;
  if (!ends) return;
  const ex = conn.current;
  if (ex !== null) ex.directDone = true;
  onMessageComplete(conn);
}

function onMessageComplete(conn) {
  // Fields llhttp hands over now are the chunked body's trailer section (§5.4): no part of
  // a fetch Request, they go to ctx.trailers before the body's stream closes, so a handler
  // that has read the body to its end finds them there. (The URL llhttp reports with them
  // is nothing.)
  let trailers = EMPTY_LIST;
  if (conn.partHeaders.length > 0) {
    trailers = conn.partHeaders;
    conn.partHeaders = [];
  }
  conn.partUrl = '';
  const ex = conn.current;
  if (ex === null) return;
  if (ex.direct && !ex.directDone) return; // llhttp skipped the body; it is still to come
  ex.complete = true;
  ex.ctx._setTrailers(trailers);
  if (ex.body !== null && !ex.abandoned) {
    ex.body.close();
    ex.body = null;
  }
  conn._maybeFinish();
}

/** §6.3: the rest of the exchange's body is dropped as it arrives; the input flows again. */
function abandonBody(conn, ex) {
  if (ex.abandoned) return;
  ex.abandoned = true;
  ex.bodyFull = false;
  if (ex.body !== null && !ex.complete) {
    try {
      ex.body.error(new Error('afterburn: the exchange has ended'));
    } catch {
      // already closed or cancelled
    }
  }
  ex.body = null;
  if (!conn.driving) conn._updateFlow();
}

// The bytes as a Buffer, over the same memory.
function asBuffer(bytes) {
  return Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

module.exports = { llhttpParser, requestBody, directBody, abandonBody };
