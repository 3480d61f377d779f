'use strict';

// Your function. The worker loads this module once, then calls the exported function for
// every request: a fetch-style handler, a Request in and a Response out.
// afterburn-runtime is installed by the template (see its README).
const { Response } = require('afterburn-runtime');

// Start-up work goes here, at module level: it runs once per worker, before the worker is
// reported ready (open a connection pool, load data).
const greeting = 'Hello';

module.exports = async (request, ctx) => {
  const url = new URL(request.url);
  // console.log is safe: it goes to the watchdog's log, never into a response.
  console.log(`${request.method} ${url.pathname} (request ${ctx.requestId})`);
  if (request.method === 'POST') {
    // Echo the body back with its content type.
    return new Response(await request.arrayBuffer(), {
      headers: { 'Content-Type': request.headers.get('content-type') ?? 'application/octet-stream' },
    });
  }
  const name = url.searchParams.get('name') || 'world';
  return new Response(`${greeting}, ${name}!\n`, {
    headers: { 'Content-Type': 'text/plain; charset=utf-8' },
  });
};
