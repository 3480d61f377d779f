'use strict';
// The floor of the Node benchmark: the thinnest fetch-style worker that can be built on what
// the library is built on, and nothing more. It does what issue 4 prescribes (Node's own
// parser, llhttp, reads the request; the handler gets an undici Request and returns an
// undici Response), through the cheapest paths the library knows (its own fetch.js and
// known-body.js), with none of the library's work besides: no frame guard (PROTOCOL.md §4.3),
// no §5.3 fields taken out, no context or deadline, no back-pressure, no error handling, no
// streamed bodies. It is not a worker anyone should run; it measures how near the library
// comes to what its dependencies allow.
//
// The handler is afterburn_fn.js's; a body reaches it whole (the benchmark's are 1 KiB).
const fs = require('node:fs');
const net = require('node:net');
const { HTTPParser, methods } = require('_http_common');
const { handle } = require('./afterburn_fn');
const { requestURL, makeRequest, readResponse, InHandBody } = require('../../../node/lib/fetch');
const { loadUndici } = require('../../../node/lib/undici'); // below the cores since 309ec50

const [input, output] = (process.env.AFTERBURN_FDS || '0,1').split(',').map(Number);
const handshakeReply = 'HTTP/1.1 200 OK\r\nAfterBurn-Protocol: 1\r\nAfterBurn-Library: bench-floor/0\r\nContent-Length: 0\r\n\r\n';
loadUndici();

function respond(response) {
  const { status, lines, bytes } = readResponse(response);
  const head = `HTTP/1.1 ${status} OK\r\n${lines}content-length: ${Buffer.byteLength(bytes)}\r\n\r\n`;
  if (typeof bytes === 'string') {
    fs.writeSync(output, head + bytes);
    return;
  }
  const out = Buffer.allocUnsafe(head.length + bytes.byteLength);
  out.latin1Write(head, 0);
  out.set(bytes, head.length);
  fs.writeSync(output, out);
}

function serve(method, url, headers, body) {
  let host = null;
  for (let i = 0; i < headers.length; i += 2) if (headers[i] === 'Host') host = headers[i + 1];
  handle(makeRequest(method, requestURL(url, host), headers, body)).then(respond);
}

let handshaken = false;
let pending = null; // a request whose body llhttp is reading
const parser = new HTTPParser();
parser.initialize(HTTPParser.REQUEST, {}, 65536, HTTPParser.kLenientNone);
parser[HTTPParser.kOnMessageBegin] = null;
parser[HTTPParser.kOnMessageComplete] = null;
// Set only while a body is read, as the library does: llhttp calls into JavaScript at the
// end of a message only when this is a function.
function onMessageComplete() {
  parser[HTTPParser.kOnMessageComplete] = null;
  const { method, url, headers, chunks } = pending;
  pending = null;
  serve(method, url, headers, new InHandBody(Buffer.concat(chunks)));
}
parser[HTTPParser.kOnHeadersComplete] = (major, minor, headers, method, url) => {
  if (!handshaken) { // §3.1: the first request is the handshake
    handshaken = true;
    fs.writeSync(output, handshakeReply);
    return 0;
  }
  for (let i = 0; i < headers.length; i += 2) {
    if (headers[i] === 'Content-Length' && headers[i + 1] !== '0') {
      pending = { method: methods[method], url, headers, chunks: [] };
      parser[HTTPParser.kOnMessageComplete] = onMessageComplete;
      return 0;
    }
  }
  serve(methods[method], url, headers, null);
  return 0;
};
parser[HTTPParser.kOnBody] = (chunk) => {
  pending.chunks.push(Buffer.from(chunk)); // a copy: the read buffer is used again
};

const readBuffer = Buffer.allocUnsafe(64 * 1024);
const { buffer: memory, byteOffset } = readBuffer;
const reader = new net.Socket({
  fd: input,
  readable: true,
  writable: false,
  onread: { buffer: readBuffer, callback: (n) => { parser.execute(new Uint8Array(memory, byteOffset, n)); } },
});
reader.on('end', () => process.exit(0));
