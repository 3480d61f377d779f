'use strict';

// The example function: `make run-node` serves it through the watchdog on
// http://127.0.0.1:8080/ (RUN_PORT). Initialisation happens once, at load; every request
// after that is a call to fetch().
//
//   curl 'http://127.0.0.1:8080/?name=ada'
//   curl -d 'some text' http://127.0.0.1:8080/upper

const { Response } = require('afterburn-runtime');

const startedAt = new Date().toISOString(); // paid once per worker, not per request
let served = 0;

module.exports = {
  async fetch(request, ctx) {
    served++;
    const url = new URL(request.url);
    if (url.pathname === '/upper' && request.method === 'POST') {
      return new Response((await request.text()).toUpperCase());
    }
    const name = url.searchParams.get('name') || 'world';
    return Response.json({
      hello: name,
      requestId: ctx.requestId,
      msLeft: ctx.hasDeadline ? Math.floor(ctx.timeRemaining()) : null,
      worker: { pid: process.pid, startedAt, served },
    });
  },
};
