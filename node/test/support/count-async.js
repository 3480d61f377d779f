'use strict';

// Preloaded (node -r) into a worker by one-lane-costs.test.js: counts the async resources
// the process creates (async_hooks init, by type: Timeout, Immediate, TickObject, PROMISE,
// FSREQCALLBACK...) between two SIGUSR2, and writes them to stderr as one line
// `async-resources {...}` at the second.

const { createHook } = require('node:async_hooks');
const fs = require('node:fs');

const counts = {};
let counting = false;
createHook({
  init(_id, type) {
    if (counting) counts[type] = (counts[type] || 0) + 1;
  },
}).enable();
process.on('SIGUSR2', () => {
  counting = !counting;
  if (!counting) fs.writeSync(2, `async-resources ${JSON.stringify(counts)}\n`);
});
