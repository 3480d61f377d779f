'use strict';

// A fetch-style app for the end-to-end tests of the fetch core under the real watchdog
// (test/fetch-e2e.test.js): each route exercises one path of lib/fetch-connection.js.
const crypto = require('node:crypto');
const { serve, Response } = require('afterburn-runtime');

const routes = {
  '/hello': () => new Response('Hello, world!\n', { headers: { 'content-type': 'text/plain' } }),
  // A large body streamed back as it arrives, with the length the request announced.
  '/echo': (request) => new Response(request.body, { headers: { 'content-length': request.headers.get('content-length') } }),
  // The whole body read, then hashed: the body stream and its back-pressure.
  async '/sha256'(request) {
    const hash = crypto.createHash('sha256');
    let len = 0;
    for await (const part of request.body) {
      hash.update(part);
      len += part.length;
    }
    return Response.json({ len, sha256: hash.digest('hex') });
  },
  // The same, after a pause: the body keeps arriving, queued, meanwhile (lib/child.js reads
  // into one buffer: what is queued must not be overwritten by the next read).
  async '/sha256-later'(request) {
    await new Promise((resolve) => setTimeout(resolve, 20));
    return routes['/sha256'](request);
  },
  // A chunked response, one chunk per tick.
  '/ticks': () => {
    let i = 0;
    return new Response(new ReadableStream({
      async pull(controller) {
        await new Promise((resolve) => setTimeout(resolve, 1));
        if (i === 5) controller.close();
        else controller.enqueue(new TextEncoder().encode(`tick ${i++}\n`));
      },
    }));
  },
  '/throw': () => { throw new Error('fetch-app: /throw'); },
  '/context': (request, ctx) => Response.json({ id: ctx.requestId, deadline: ctx.hasDeadline, fields: [...request.headers.keys()] }),
};

serve((request, ctx) => {
  const { pathname } = new URL(request.url);
  const route = routes[pathname];
  return route ? route(request, ctx) : new Response('no such route', { status: 404 });
});
