'use strict';

// Theory of operation.
//
// Bodies that are all there at once: a Response made from a string or bytes, and a request
// whose whole Content-Length body arrived with its head. undici keeps every body as a record
// {stream, source, length} and makes its ReadableStream at once; on Node 20 making one costs
// more than the rest of a small exchange together (the constructor makes every stream
// transferable). Most of these streams are never read as streams: the worker writes a
// Response's source to the pipe as it is (fetch-response.js), and a handler reads a small
// request body with arrayBuffer(), text() or json().
//
// So the records here make their stream only when something asks for `stream`: undici's
// getters (body, bodyUsed), clone() (which tees it and assigns the branch back, hence the
// setter), consuming methods, fetch(), new Request/Response from this one. Until then the
// bytes are sent or read as they are. Everything undici does goes through the record, so it
// behaves as undici's own: the stream, once made, is the one undici would have made for a
// Response, and for a request body one of Buffers, as a streamed request body is.
//
//   Response (exported by the package): a subclass of undici's; a string or BufferSource
//     body gets a KnownBody instead of undici's record; every other body, and every check
//     and error, is undici's own constructor's.
//   Request (internal, the class of the requests serve() makes): a subclass of undici's
//     whose arrayBuffer(), bytes(), text() and json() read an InHandBody not yet made a
//     stream directly, and whose signal is made on first use.

// undici's extractBody (set by makeResponseClass).
let extractBody = null;

// Bytes up to this size are copied into Node's Buffer pool (Buffer.allocUnsafe's own limit).
const SMALL = Buffer.poolSize >>> 1;

/**
 * A Response body from a string or bytes (undici's extractBody: source, length), whose
 * stream undici's extractBody makes when first asked for.
 */
class KnownBody {
  constructor(source, length) {
    this.source = source;
    this.length = length;
    this._stream = null;
  }

  get stream() {
    if (this._stream === null) this._stream = extractBody(this.source)[0].stream;
    return this._stream;
  }

  set stream(stream) {
    this._stream = stream; // undici's cloneBody puts one branch of the tee back
  }

  /** The source, when no stream has been made: nothing can have read or locked it. */
  get untouched() {
    return this._stream === null;
  }
}

/**
 * A request body whose bytes are all in hand. Its record is the one a streamed request body
 * has (source and length null: undici treats it as a stream, as before); the stream, made
 * when first asked for, yields the bytes as one Buffer and closes. Once the bytes were read
 * directly, the stream made is closed, locked and disturbed, as undici leaves one it read.
 */
class InHandBody {
  constructor(bytes) {
    this.source = null;
    this.length = null;
    this._bytes = bytes;
    this._used = false;
    this._stream = null;
  }

  get stream() {
    if (this._stream === null) this._stream = this._used ? readStream() : bytesStream(this._bytes);
    return this._stream;
  }

  set stream(stream) {
    this._stream = stream;
  }

  /** The bytes, once; null when a stream has been made or they were taken. */
  take() {
    if (this._stream !== null || this._used) return null;
    this._used = true;
    const bytes = this._bytes;
    this._bytes = null;
    return bytes;
  }
}

function bytesStream(bytes) {
  return new ReadableStream({
    start(controller) {
      controller.enqueue(bytes);
      controller.close();
    },
  });
}

// A stream as undici leaves the one it read to the end: closed, locked, disturbed.
function readStream() {
  const stream = new ReadableStream({ start: (controller) => controller.close() });
  stream.getReader().read().catch(() => {});
  return stream;
}

// The bytes as an ArrayBuffer of their own: the one they are in when it is theirs alone.
function ownArrayBuffer(bytes) {
  const { buffer, byteOffset, byteLength } = bytes;
  if (byteOffset === 0 && byteLength === buffer.byteLength) return buffer;
  return buffer.slice(byteOffset, byteOffset + byteLength);
}

/**
 * The package's Response class: undici's, with string and bytes bodies kept as they are.
 * @param {object} u undici's classes and the internals of lib/undici.js
 * @param {() => boolean} enabled whether the shortcuts are on (lib/undici.js useInternals)
 */
function makeResponseClass(u, enabled) {
  const { getResponseState, webidl, nullBodyStatus, serializeJSON } = u.internals;
  extractBody = u.internals.extractBody;
  const isBufferSource = webidl.is.BufferSource;
  const getCopy = webidl.util.getCopyOfBytesHeldByBufferSource;
  // undici's copy of the bytes (https://webidl.spec.whatwg.org/#dfn-get-buffer-source-copy),
  // a small one made in Node's Buffer pool: no memory of its own to allocate and to free
  // in a collection. Nothing but this library sees the source; a stream made from it
  // copies it again.
  function copyBytes(body) {
    const n = body.byteLength;
    if (n === 0 || n >= SMALL) return getCopy(body); // (a detached buffer has none)
    const copy = Buffer.allocUnsafe(n);
    copy.set(ArrayBuffer.isView(body) ? new Uint8Array(body.buffer, body.byteOffset, n) : new Uint8Array(body));
    return copy;
  }
  const encoder = new TextEncoder();

  // Installs the body in a Response made with a null body, as undici's "initialize a
  // response" does with an extracted one (https://fetch.spec.whatwg.org/#initialize-a-response,
  // step 6): a null body status refuses it with undici's own TypeError.
  function setBody(response, source, type) {
    const state = getResponseState(response);
    if (nullBodyStatus.includes(state.status)) {
      throw webidl.errors.exception({
        header: 'Response constructor',
        message: `Invalid response status code ${state.status}`,
      });
    }
    const length = typeof source === 'string' ? Buffer.byteLength(source) : source.length;
    state.body = new KnownBody(source, length);
    if (type !== null && !state.headersList.contains('content-type', true)) {
      state.headersList.append('content-type', type, true);
    }
  }

  class Response extends u.Response {
    constructor(body = null, init = undefined) {
      // What undici's BodyInit conversion and extractBody take as a string or a
      // BufferSource (an async iterable is taken as a stream before either).
      let kind = 0;
      if (enabled()) {
        if (typeof body === 'string') kind = 1;
        else if (typeof body === 'object' && body !== null && isBufferSource(body)) kind = 2;
        if (kind !== 0 && body[Symbol.asyncIterator] !== undefined) kind = 0;
      }
      if (kind === 0) {
        super(body, init);
        return;
      }
      // undici converts init (running any getters it has) before it copies the bytes.
      super(null, init);
      if (kind === 1) setBody(this, body.toWellFormed(), 'text/plain;charset=UTF-8');
      else setBody(this, copyBytes(body), null);
    }

    // https://fetch.spec.whatwg.org/#dom-response-json, as undici's, with the bytes kept.
    static json(data, init = undefined) {
      if (!enabled() || arguments.length < 1 || init === null) return super.json(...arguments);
      const bytes = encoder.encode(serializeJSON(data));
      const response = new Response(null, init);
      setBody(response, bytes, 'application/json');
      return response;
    }
  }
  return Response;
}

/**
 * The class of the Requests serve() makes: undici's, reading an InHandBody directly.
 * @param {object} u undici's classes and the internals of lib/undici.js
 */
function makeRequestClass(u) {
  const { getRequestState, utf8DecodeBytes } = u.internals;

  function inHand(request) {
    let state;
    try {
      state = getRequestState(request);
    } catch {
      return null; // not a Request: undici's method rejects
    }
    const body = state.body;
    return body instanceof InHandBody ? body : null;
  }

  // The bytes of an in-hand body nothing has read yet, taken; else null (undici's own way).
  function take(request) {
    const body = inHand(request);
    return body === null ? null : body.take();
  }

  class Request extends u.Request {
    // Never aborts, as the signal of a `new Request(url)` does not; but an AbortSignal
    // costs about as much to make as the rest of the Request on Node 20, and few handlers
    // look at it. (undici's private field stays empty: it reads that only to make a
    // Request from this one follow it, which one that never aborts needs no listener for.)
    get signal() {
      const own = super.signal; // one made by this class's constructor has undici's
      if (own !== undefined) return own;
      const signal = new AbortController().signal;
      Object.defineProperty(this, 'signal', { value: signal, configurable: true, enumerable: false, writable: false });
      return signal;
    }

    get bodyUsed() {
      const body = inHand(this);
      if (body !== null && body._stream === null) return body._used;
      return super.bodyUsed;
    }

    arrayBuffer() {
      const bytes = take(this);
      if (bytes === null) return super.arrayBuffer();
      return Promise.resolve(ownArrayBuffer(bytes));
    }

    bytes() {
      const bytes = take(this);
      if (bytes === null) return super.bytes();
      return Promise.resolve(new Uint8Array(ownArrayBuffer(bytes)));
    }

    text() {
      const bytes = take(this);
      if (bytes === null) return super.text();
      return Promise.resolve(utf8DecodeBytes(bytes));
    }

    json() {
      const bytes = take(this);
      if (bytes === null) return super.json();
      try {
        return Promise.resolve(JSON.parse(utf8DecodeBytes(bytes)));
      } catch (err) {
        return Promise.reject(err);
      }
    }
  }
  return Request;
}

module.exports = { KnownBody, InHandBody, makeResponseClass, makeRequestClass };
