'use strict';

// afterburn-runtime/testing: call a handler or a listener in-process, through the same
// core a worker runs (the FrameGuard, Node's parser, the response framing, the error
// responses of PROTOCOL.md §8: lib/fetch-connection.js for invoke, lib/connection.js for
// invokeListener), and get the response back as the watchdog would read it.
// No watchdog, no pipes, no process.
//
//   const { invoke } = require('afterburn-runtime/testing');
//   const res = await invoke(handler, 'http://fn/hello?name=ada');
//   assert.equal(await res.text(), 'hello ada');

const { Connection } = require('./lib/connection');
const { fetchCore } = require('./lib/fetch-core');
const { loadUndici } = require('./lib/undici');
const { readResponses } = require('./lib/response-reader');
const { limitsFromEnv } = require('./lib/config');

class IncompleteResponseError extends Error {
  constructor(status) {
    super(`afterburn: the ${status} response ended early: its head was sent, then the handler ` +
      'failed, so the worker would exit and the client see a truncated body (PROTOCOL.md §8.3)');
    this.name = 'IncompleteResponseError';
    this.status = status;
  }
}

/** The bytes a watchdog would write for this request (PROTOCOL.md §4.2, §5.1, §5.2). */
async function requestBytes(request, options) {
  const url = new URL(request.url);
  const body = request.body === null ? Buffer.alloc(0) : Buffer.from(await request.arrayBuffer());
  let head = `${request.method} ${url.pathname}${url.search} HTTP/1.1\r\nHost: ${url.host}\r\n`;
  for (const [name, value] of request.headers) {
    if (name === 'host' || name === 'content-length' || name === 'transfer-encoding') continue;
    head += `${name}: ${value}\r\n`;
  }
  if (options.requestId !== undefined) head += `AfterBurn-Request-Id: ${options.requestId}\r\n`;
  if (options.timeoutMs !== undefined) head += `AfterBurn-Timeout-Ms: ${Math.max(0, Math.floor(options.timeoutMs))}\r\n`;
  head += `Content-Length: ${body.length}\r\n\r\n`;
  return Buffer.concat([Buffer.from(head, 'latin1'), body]);
}

async function exchange(Core, handle, input, init, options = {}) {
  const { Request, Response } = loadUndici();
  const request = input instanceof Request && init === undefined ? input : new Request(input, init);
  const bytes = await requestBytes(request, options);
  const out = [];
  const log = options.log || ((text) => process.stderr.write(text));
  const code = await new Promise((resolve) => {
    const conn = new Core({
      limits: limitsFromEnv(options.env || {}),
      handle,
      log,
      sink: { write: (chunk) => out.push(Buffer.from(chunk)), end: resolve },
    });
    conn.push(bytes);
    conn.end(); // EOF after the request: the connection stops once the exchange is over
  });
  const { responses } = readResponses(Buffer.concat(out), { bodyless: () => request.method === 'HEAD' });
  const parsed = responses[0];
  if (!parsed) throw new Error(`afterburn: no response (the connection stopped with status ${code})`);
  if (!parsed.complete) throw new IncompleteResponseError(parsed.status);
  const nullBody = request.method === 'HEAD' || parsed.status === 204 || parsed.status === 304;
  return new Response(nullBody ? null : parsed.body, {
    status: parsed.status,
    statusText: parsed.statusText,
    headers: parsed.headers,
  });
}

/**
 * Calls a fetch-style handler with a request built like `new Request(input, init)` and
 * returns its response as a client would see it from the worker. A handler that throws
 * gives the 500 handler_error response (its stack goes to options.log); one that fails
 * after its response started makes the returned promise reject with an
 * IncompleteResponseError.
 * @param {(request: Request, ctx: object) => Response | Promise<Response>} handler
 * @param {string | URL | Request} input an absolute URL, e.g. "http://fn/path?q=1"
 * @param {RequestInit} [init]
 * @param {{requestId?: string, timeoutMs?: number, log?: (text: string) => void, env?: object}} [options]
 *   requestId and timeoutMs play the watchdog's AfterBurn-Request-Id and AfterBurn-Timeout-Ms.
 */
function invoke(handler, input, init, options) {
  if (typeof handler !== 'function') throw new TypeError('afterburn: serve(handler) needs a function');
  return exchange(fetchCore(), handler, input, init, options);
}

/** As invoke, for a Node request listener `(req, res)`: an Express or Koa app, a function. */
function invokeListener(listener, input, init, options) {
  if (typeof listener !== 'function') throw new TypeError('afterburn: invokeListener(listener) needs a function');
  return exchange(Connection, (req, res) => listener(req, res), input, init, options);
}

module.exports = { invoke, invokeListener, IncompleteResponseError };
