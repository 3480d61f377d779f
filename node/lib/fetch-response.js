'use strict';

// The response side of the fetch core (fetch-connection.js): the handler's Response written
// to the sink as the bytes of an HTTP/1.1 response, each head in one string.
//
// A body known at once (a string or bytes) is written with its head in one write and
// Content-Length; any other body is chunked, each chunk written as the handler's stream
// yields it (§6.1), unless the handler set a Content-Length itself, which is then held to.
// Trailers the handler added (ctx.addTrailers) go on the last chunk of a chunked body (§5.4).
// Responses to HEAD and every 204 and 304 have no body (§4.4). No Date field: the watchdog's
// clock is the one clients see. Every head of a handler's Response is made by `head`, which
// puts the request's AfterBurn-Exchange token right after the status line (§4.6); the
// library's own answers (the handshake reply, §8.1 errors) are made whole by protocol.js
// and errors.js.
//
// The functions take the connection first, as undici's client-h1.js takes its client: the
// writer has no state of its own. From the connection they use its sink, whether it has
// stopped or failed, and its lifecycle (lifecycle.js): _output (bytes to the sink, which
// stops the connection if the pipe broke), _sinkFailed, _finished (the response is
// complete) and _handlerFailed (§8.3).

const { readResponse, bodyless, checkKnownLength, checkStreamedLength, asBytes, nextTurn } = require('./fetch');
const { lastChunk } = require('./trailers');

// A known body up to this size is copied behind its head, for one write; a larger one is
// written on its own right after the head.
const COALESCE_MAX = 64 * 1024;

const CRLF = Buffer.from('\r\n', 'latin1');
const LAST_CHUNK = Buffer.from('0\r\n\r\n', 'latin1');
const EMPTY = new Uint8Array(0);

/**
 * Writes the handler's Response for the exchange. Not async: a body known at once is
 * written before this returns, without a promise; a streamed one goes on after it.
 * @param {import('./fetch-connection').FetchConnection} conn
 */
function respond(conn, ex, response) {
  if (conn.stopped || conn.failure) return;
  try {
    const r = readResponse(response);
    const { status, reason, stream, length: declared } = r;
    let { bytes } = r;
    const noBody = bodyless(ex.method, status);
    let fields = r.lines;

    if (bytes === null && stream === null) bytes = EMPTY;
    if (bytes !== null && !noBody && declared < 0 && hasTrailers(ex)) {
      // Trailers added before the response was returned: they need a chunked body (§5.4).
      writeHead(conn, ex, status, reason, `${fields}transfer-encoding: chunked\r\n`, null);
      writeChunk(conn, typeof bytes === 'string' ? Buffer.from(bytes, 'utf8') : bytes);
      writeLastChunk(conn, ex);
      conn._finished(ex);
      return;
    }
    if (bytes !== null) {
      // The whole body is known: Content-Length, one write (§4.4).
      if (typeof bytes === 'string') {
        if (!noBody && declared < 0 && bytes.length <= COALESCE_MAX / 3) {
          writeHeadAndText(conn, ex, status, reason, fields, bytes);
          conn._finished(ex);
          return;
        }
        bytes = Buffer.from(bytes, 'utf8');
      }
      if (noBody) {
        if (declared < 0 && status !== 204 && status !== 304) fields += `content-length: ${bytes.byteLength}\r\n`;
        writeHead(conn, ex, status, reason, fields, null);
      } else {
        checkKnownLength(declared, bytes.byteLength);
        if (declared < 0) fields += `content-length: ${bytes.byteLength}\r\n`;
        writeHead(conn, ex, status, reason, fields, bytes);
      }
      conn._finished(ex);
      return;
    }
    if (noBody) {
      stream.cancel().catch(() => {});
      writeHead(conn, ex, status, reason, fields, null);
      conn._finished(ex);
      return;
    }
    writeStream(conn, ex, status, reason, fields, declared, stream).catch((err) => conn._handlerFailed(ex, err));
  } catch (err) {
    conn._handlerFailed(ex, err);
  }
}

// A body that comes as a stream: each chunk is written as the stream yields it (§6.1).
async function writeStream(conn, ex, status, reason, fields, declared, stream) {
  const reader = stream.getReader();
  try {
    if (declared >= 0) {
      // The handler said how long it is: the body is sent as is and must be that long.
      writeHead(conn, ex, status, reason, fields, null);
      let sent = 0;
      for (;;) {
        const { done, value } = await reader.read();
        if (conn.stopped) return;
        if (done) break;
        const chunk = asBytes(value);
        sent += chunk.byteLength;
        checkStreamedLength(declared, sent, false);
        if (chunk.byteLength > 0) conn._output(chunk);
        if (conn.sink.drained !== undefined && !(await drained(conn))) return;
      }
      checkStreamedLength(declared, sent, true);
      conn._finished(ex);
      return;
    }
    const first = await reader.read();
    if (conn.stopped) return;
    if (first.done && !hasTrailers(ex)) {
      writeHead(conn, ex, status, reason, `${fields}content-length: 0\r\n`, null);
      conn._finished(ex);
      return;
    }
    // (An empty body gets here only to carry trailers: its first read is the last.)
    let pending = first.done ? first : reader.read();
    // A body that was all there at once (a stream closed right after its one chunk) still
    // gets Content-Length: the second read has settled already, or does within the turn.
    const settled = first.done ? first : await Promise.race([pending, nextTurn()]);
    if (conn.stopped) return;
    const firstBytes = first.done ? EMPTY : asBytes(first.value);
    if (settled !== undefined && settled.done && !hasTrailers(ex)) {
      writeHead(conn, ex, status, reason, `${fields}content-length: ${firstBytes.byteLength}\r\n`, firstBytes);
      conn._finished(ex);
      return;
    }
    writeHead(conn, ex, status, reason, `${fields}transfer-encoding: chunked\r\n`, null);
    writeChunk(conn, firstBytes);
    for (;;) {
      const next = await pending;
      if (conn.stopped) return;
      if (next.done) break;
      writeChunk(conn, asBytes(next.value)); // written to the pipe now: a chunk per read (§6.1)
      if (conn.sink.drained !== undefined && !(await drained(conn))) return;
      pending = reader.read();
    }
    writeLastChunk(conn, ex);
    conn._finished(ex);
  } catch (err) {
    reader.cancel(err).catch(() => {});
    throw err;
  }
}

// A lane's writer (§2.5) holding more than it likes: the stream is read on once it has
// written it, so a client that does not read stalls its own handler and no one else's.
// Returns whether to go on (false once the connection stopped).
async function drained(conn) {
  const wait = conn.sink.drained();
  if (wait !== null) await wait;
  return !conn.stopped;
}

// Every head of a Response the handler returned is made here: the status line, then the
// exchange token of a request that carried one (§4.6), then the fields (lines with their
// CRLFs) and the empty line. One place, so no way of answering can leave the token out,
// and none can write it twice: a handler's own is dropped (fetch.js readResponse). A part of the head's own string, it costs no write; spelled
// here rather than with errors.js's exchangeLine, which would make the line a string of
// its own before the head, per request.
function head(ex, status, reason, fields) {
  const token = ex.exchange;
  return token === null ? `HTTP/1.1 ${status} ${reason}\r\n${fields}\r\n`
    : `HTTP/1.1 ${status} ${reason}\r\nAfterBurn-Exchange: ${token}\r\n${fields}\r\n`;
}

// A head, and the body known with it in the same write up to COALESCE_MAX (§4.6 asks for
// one write; the kernel keeps a pipe write whole only up to PIPE_BUF, 4096 bytes). `fields`:
// the head's fields as lines, each with its CRLF.
function writeHead(conn, ex, status, reason, fields, body) {
  ex.headSent = true;
  const text = head(ex, status, reason, fields);
  if (body === null || body.byteLength === 0) {
    outputLatin1(conn, text);
    return;
  }
  if (body.byteLength > COALESCE_MAX) {
    conn._output(Buffer.from(text, 'latin1'));
    conn._output(body);
    return;
  }
  const out = Buffer.allocUnsafe(text.length + body.byteLength);
  out.latin1Write(text, 0);
  out.set(body, text.length);
  conn._output(out);
}

// A head with Content-Length and a short text body in one write.
function writeHeadAndText(conn, ex, status, reason, fields, text) {
  ex.headSent = true;
  const size = Buffer.byteLength(text, 'utf8');
  const full = head(ex, status, reason, `${fields}content-length: ${size}\r\n`);
  if (size === text.length) {
    // Only ASCII (a UTF-16 unit of U+0080 or above takes 2 or more bytes in UTF-8): the
    // text's UTF-8 bytes are its latin1 ones, so head and body go as one string.
    outputLatin1(conn, full + text);
    return;
  }
  const out = Buffer.allocUnsafe(full.length + size);
  out.latin1Write(full, 0);
  out.utf8Write(text, full.length);
  conn._output(out);
}

function writeChunk(conn, bytes) {
  const n = bytes.byteLength;
  if (n === 0) return; // an empty chunk would be the last one
  const size = `${n.toString(16)}\r\n`;
  if (n > COALESCE_MAX) {
    conn._output(Buffer.from(size, 'latin1'));
    conn._output(bytes);
    conn._output(CRLF);
    return;
  }
  const out = Buffer.allocUnsafe(size.length + n + 2);
  out.latin1Write(size, 0);
  out.set(bytes, size.length);
  out[size.length + n] = 0x0d;
  out[size.length + n + 1] = 0x0a;
  conn._output(out);
}

// The last chunk, with the trailers the handler added by now (ctx.addTrailers, §5.4).
function writeLastChunk(conn, ex) {
  if (hasTrailers(ex)) outputLatin1(conn, lastChunk(ex.ctx._responseTrailers.lines()));
  else conn._output(LAST_CHUNK);
}

// Text of one byte per character (a head, or a head and an ASCII body). A sink that
// takes it as it is (child.js: fs.writeSync encodes it in C++) spares a Buffer and the
// calls that fill it, which cost more than the write itself in a worker that wakes per
// request.
function outputLatin1(conn, text) {
  if (conn.stopped) return;
  try {
    if (conn.sink.writeLatin1 !== undefined) conn.sink.writeLatin1(text);
    else conn.sink.write(Buffer.from(text, 'latin1'));
  } catch (err) {
    conn._sinkFailed(err);
  }
}

// Whether the handler added response trailers (ctx.addTrailers).
function hasTrailers(ex) {
  const t = ex.ctx._responseTrailers;
  return t !== null && t.pairs.length > 0;
}

module.exports = { respond };
