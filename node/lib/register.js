'use strict';

// Preloaded before user code (`node --require afterburn-runtime/register app.js`, or
// `--import`; the afterburn launcher does the same): moves the protocol off stdin and
// stdout now, so that what user code prints while it loads — banners, console.log at
// import time, native addons — lands in the logs (PROTOCOL.md §2.4, §3.3). In fd mode
// there is nothing to move and this does nothing.

const { protocolDescriptors } = require('./fds');

try {
  protocolDescriptors(process.env);
} catch (err) {
  // PROTOCOL.md §2.3: a bad AFTERBURN_FDS ends the worker, non-zero, with a message.
  process.stderr.write(`${err.message}\n`);
  process.exit(2);
}
