'use strict';

// The fetch style on Node's public http machinery: the listener core (connection.js:
// http.Server over the pipe, IncomingMessage, ServerResponse) with an adapter that makes the
// undici Request from each IncomingMessage and writes the handler's Response to the
// ServerResponse. fetch-connection.js does the same work faster by driving llhttp through
// `_http_common`, an internal module of Node's that is on its way out (http-parser.js);
// this core is what serve() runs where that module is gone or warns (fetch-core.js).
//
// The contract is the fetch core's: the same Request (method, URL, fields without the
// §5.3 ones, a streamed body), the same ctx (rawTarget, rawHeaders, trailers once the body
// is read), the same response framing (a body known at once with Content-Length, a stream
// chunked as it is produced, the handler's Content-Length held to, trailers on a chunked
// body), the same errors (a handler that throws or returns no Response: 500 handler_error
// before the head, an incomplete response after it, §8.3).

const { once } = require('node:events');
const { Connection } = require('./connection');
const {
  startFetchHandler, requestURL, makeRequest, requestBodyStream, readResponse, bodyless, checkKnownLength,
  checkStreamedLength, asBytes, nextTurn,
} = require('./fetch');

const EMPTY = new Uint8Array(0);

class FetchListenerConnection extends Connection {
  /** @param {object} options the same as FetchConnection's (fetch-connection.js) */
  constructor(options) {
    const { handle } = options;
    startFetchHandler(handle);
    super({ ...options, handle: (req, res, ctx) => serveFetch(handle, req, res, ctx) });
  }
}

/** One exchange: the Request from req, the handler, its Response onto res. */
async function serveFetch(handle, req, res, ctx) {
  // ctx has the request as sent and, once req ends, its trailers (connection.js); response
  // trailers are written here, from ctx, not by res.addTrailers at once.
  ctx._listenerResponse = null;
  const method = req.method;
  // §4.2: a request without Content-Length or Transfer-Encoding has an empty body; GET and
  // HEAD cannot carry one in a Request, so theirs is drained instead.
  const cl = req.headers['content-length'];
  const framed = req.headers['transfer-encoding'] !== undefined || (cl !== undefined && !/^0+$/.test(cl));
  let body = null;
  if (framed && method !== 'GET' && method !== 'HEAD') {
    body = bodyStream(req, ctx);
  } else {
    req.resume();
  }
  const request = makeRequest(method, requestURL(req.url, req.headers.host), req.rawHeaders, body);
  const response = await handle(request, ctx);
  await writeResponse(req, res, ctx, response);
}

// The body as a ReadableStream of Buffers whose back-pressure pauses the IncomingMessage.
function bodyStream(req, ctx) {
  return requestBodyStream({
    start(controller) {
      req.on('data', (chunk) => {
        controller.enqueue(chunk);
        if (controller.desiredSize <= 0) req.pause();
      });
      // (After connection.js's own 'end' listener: a reader at the end finds the trailers.)
      req.on('end', () => controller.close());
      req.on('error', (err) => controller.error(err));
    },
    pull() {
      req.resume();
    },
    cancel() {
      // A handler that stops reading: the rest is the library's to drain (§6.3;
      // connection.js turns destroy into that).
      req.destroy();
    },
  });
}

async function writeResponse(req, res, ctx, response) {
  const { status, reason, lines, length: declared, bytes: known, stream } = readResponse(response);
  const fields = fieldsOf(lines);
  const noBody = bodyless(req.method, status);
  const trailers = () => ctx._responseTrailerPairs;
  let bytes = known;
  if (bytes === null && stream === null) bytes = EMPTY;
  if (typeof bytes === 'string') bytes = Buffer.from(bytes, 'utf8');

  if (bytes !== null) {
    if (noBody) {
      if (declared < 0 && status !== 204 && status !== 304) fields.push('content-length', String(bytes.byteLength));
      res.writeHead(status, reason, fields);
      res.end();
      return;
    }
    checkKnownLength(declared, bytes.byteLength);
    if (declared < 0 && trailers().length > 0) {
      // Trailers added before the response was returned: they need a chunked body (§5.4).
      res.writeHead(status, reason, fields);
      if (bytes.byteLength > 0) res.write(bytes);
      res.addTrailers(trailers());
      res.end();
      return;
    }
    if (declared < 0) fields.push('content-length', String(bytes.byteLength));
    res.writeHead(status, reason, fields);
    res.end(bytes);
    return;
  }
  if (noBody) {
    stream.cancel().catch(() => {});
    res.writeHead(status, reason, fields);
    res.end();
    return;
  }
  // A stream: chunked as it is produced, or held to the handler's Content-Length (§6.1).
  const reader = stream.getReader();
  try {
    if (declared < 0) {
      // As the fetch core does: a body that was all there at once (a stream closed right
      // after its one chunk, as a Response of Node's global undici gives) still gets
      // Content-Length: the second read has settled already, or does within the turn.
      const first = await reader.read();
      const pending = first.done ? first : reader.read();
      const settled = first.done ? first : await Promise.race([pending, nextTurn()]);
      const firstBytes = first.done ? EMPTY : asBytes(first.value);
      if (settled !== undefined && settled.done && trailers().length === 0) {
        fields.push('content-length', String(firstBytes.byteLength));
        res.writeHead(status, reason, fields);
        res.end(firstBytes);
        return;
      }
      // Node would send the head with the first chunk; the fetch core sends it at once.
      res.writeHead(status, reason, fields);
      res.flushHeaders();
      if (firstBytes.byteLength > 0 && !res.write(firstBytes)) await once(res, 'drain');
      for (let next = await pending; !next.done; next = await reader.read()) {
        const chunk = asBytes(next.value);
        if (chunk.byteLength > 0 && !res.write(chunk)) await once(res, 'drain');
      }
      if (trailers().length > 0) res.addTrailers(trailers());
      res.end();
      return;
    }
    res.writeHead(status, reason, fields);
    res.flushHeaders();
    let sent = 0;
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      const chunk = asBytes(value);
      sent += chunk.byteLength;
      checkStreamedLength(declared, sent, false);
      if (chunk.byteLength > 0 && !res.write(chunk)) await once(res, 'drain');
    }
    checkStreamedLength(declared, sent, true);
    res.end();
  } catch (err) {
    reader.cancel(err).catch(() => {});
    throw err;
  }
}

// readResponse's head lines ("name: value\r\n", each checked) as a flat [name, value...] list.
function fieldsOf(lines) {
  const flat = [];
  for (let start = 0; start < lines.length;) {
    const end = lines.indexOf('\r\n', start);
    const colon = lines.indexOf(': ', start);
    flat.push(lines.slice(start, colon), lines.slice(colon + 2, end));
    start = end + 2;
  }
  return flat;
}

module.exports = { FetchListenerConnection };
