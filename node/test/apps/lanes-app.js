'use strict';

// A worker for the lanes tests (lanes.test.js), in either handler style, with the routes of
// the fixture contract that lanes are about: `node lanes-app.js fetch|fetch-public|listener
// [MAX_LANES]`.
//
//   /sleep?ms=N          {"slept_ms": N}, an asynchronous sleep
//   /wait-cancel?ms=N    until ctx.signal aborts or N ms pass; {"cancelled": bool}; with
//                        &throw=1 the abort is not caught: the handler fails with it
//   /large?size=N        N bytes (byte i = i % 251), streamed in 32 KiB pieces, chunked
//   /log?text=T          ctx.log(T); {"logged": true}
//   anything else        the echo of conformance/README.md

const [style, max] = process.argv.slice(2);

// fetch-public: the fetch style as it runs on a Node whose _http_common is internal-only
// (nodejs/node#58534): a user-land require of it fails, so serve() takes the core on the
// public http machinery (lib/fetch-core.js).
if (style === 'fetch-public') {
  const Module = require('node:module');
  const load = Module._load;
  Module._load = function loadWithoutHttpCommon(request, ...rest) {
    if (request === '_http_common') {
      throw Object.assign(new Error(`Cannot find module '${request}'`), { code: 'MODULE_NOT_FOUND' });
    }
    return load.call(this, request, ...rest);
  };
}

const { setTimeout: sleep } = require('node:timers/promises');
const { serve, serveListener, context, Response } = require('afterburn-runtime');
const { echo: fetchEcho } = require('../support/fetch-echo');
const { echoOf } = require('../fixture/echo');

const options = max === undefined ? undefined : { maxLanes: Number(max) };

function piece(from, n) {
  const bytes = Buffer.allocUnsafe(n);
  for (let j = 0; j < n; j++) bytes[j] = (from + j) % 251;
  return bytes;
}

async function waitCancel(ctx, ms, rethrow) {
  try {
    await sleep(ms, undefined, { signal: ctx.signal });
    return false;
  } catch (err) {
    if (err.name !== 'AbortError' || rethrow) throw err;
    process.stderr.write(`cancelled ${ctx.requestId}\n`);
    return true;
  }
}

async function fetchHandler(request, ctx) {
  const url = new URL(request.url);
  const q = url.searchParams;
  switch (url.pathname) {
    case '/sleep':
      await sleep(Number(q.get('ms')));
      return Response.json({ slept_ms: Number(q.get('ms')) });
    case '/wait-cancel':
      return Response.json({ cancelled: await waitCancel(ctx, Number(q.get('ms')), q.get('throw') === '1') });
    case '/log':
      ctx.log(q.get('text'));
      return Response.json({ logged: true });
    case '/large': {
      const size = Number(q.get('size'));
      let sent = 0;
      return new Response(new ReadableStream({
        pull(controller) {
          const n = Math.min(32 * 1024, size - sent);
          if (n <= 0) {
            controller.close();
            return;
          }
          controller.enqueue(piece(sent, n));
          sent += n;
        },
      }, { highWaterMark: 0 }));
    }
    default:
      return fetchEcho(request, ctx);
  }
}

function reply(res, value) {
  const body = JSON.stringify(value);
  res.writeHead(200, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(body) });
  res.end(body);
}

async function listener(req, res) {
  const ctx = context(req);
  const url = new URL(req.url, 'http://fn');
  const q = url.searchParams;
  switch (url.pathname) {
    case '/sleep':
      await sleep(Number(q.get('ms')));
      return reply(res, { slept_ms: Number(q.get('ms')) });
    case '/wait-cancel':
      return reply(res, { cancelled: await waitCancel(ctx, Number(q.get('ms')), q.get('throw') === '1') });
    case '/log':
      ctx.log(q.get('text'));
      return reply(res, { logged: true });
    case '/large': {
      const size = Number(q.get('size'));
      res.writeHead(200);
      for (let sent = 0; sent < size;) {
        const n = Math.min(32 * 1024, size - sent);
        if (!res.write(piece(sent, n))) await new Promise((resolve) => res.once('drain', resolve));
        sent += n;
      }
      return res.end();
    }
    default: {
      const parts = [];
      for await (const part of req) parts.push(part);
      return reply(res, echoOf(req, Buffer.concat(parts)));
    }
  }
}

if (style === 'fetch' || style === 'fetch-public') serve(fetchHandler, options);
else if (style === 'listener') serveListener(listener, options);
else throw new Error(`usage: lanes-app.js fetch|fetch-public|listener [MAX_LANES], not ${style}`);

if (style === 'fetch-public' && !Object.keys(require.cache).some((f) => f.endsWith('fetch-listener.js'))) {
  throw new Error('lanes-app: fetch-public does not run on the public http core');
}
