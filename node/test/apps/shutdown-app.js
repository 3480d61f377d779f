'use strict';

// Shutdown hooks (onShutdown) under the real watchdog (test/shutdown.test.js): each hook
// writes a line to SHUTDOWN_OUT when it has run; SHUTDOWN_HANG adds one that never ends.
const fs = require('node:fs');
const { serve, onShutdown, Response } = require('afterburn-runtime');

const out = process.env.SHUTDOWN_OUT;

onShutdown(async () => {
  await new Promise((resolve) => setTimeout(resolve, 300)); // an asynchronous flush
  fs.appendFileSync(out, 'flushed after 300 ms\n');
});
onShutdown(() => fs.appendFileSync(out, 'closed\n'));
onShutdown(async () => {
  throw new Error('this hook fails');
});
if (process.env.SHUTDOWN_HANG === '1') {
  onShutdown(() => new Promise(() => setInterval(() => {}, 1000)));
}

serve(() => new Response('ok'));
