'use strict';
// The Node function of the lanes scenario (bench/README.md, "Lanes"): GET /io waits 50 ms
// on a timer, as a handler awaiting a database or another service does, and answers 1 KiB.
// The await leaves the event loop free, so one worker's lanes wait together. Any other
// request gets the greeting of every benchmark function.
const { setTimeout: sleep } = require('node:timers/promises');
const { serve, Response } = require('../../../node');

const greeting = 'Hello, world!\n';
const kib = 'abcdefghijklmnop'.repeat(64);
const headers = { 'content-type': 'text/plain' };

async function handle(request) {
  if (new URL(request.url).pathname !== '/io') return new Response(greeting, { headers });
  await sleep(50);
  return new Response(kib, { headers });
}

serve(handle);
