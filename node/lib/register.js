'use strict';

// Preloaded before user code (`node --require afterburn-runtime/register app.js`, or
// `--import`; the afterburn launcher does the same): moves the protocol off stdin and
// stdout now, so that what user code prints while it loads — banners, console.log at
// import time, native addons — lands in the logs (PROTOCOL.md §2.4, §3.3). In fd mode
// there is nothing to move and this does nothing.

const { protocolDescriptors, checkProtocolPipes } = require('./fds');

try {
  // Before user code loads: a worker started through a wrapper that dropped the pipes
  // (npx, npm exec) says so at once, not after the app's initialisation.
  checkProtocolPipes(protocolDescriptors(process.env));
} catch (err) {
  // PROTOCOL.md §2.3: a bad AFTERBURN_FDS, or descriptors that are not the protocol's pipes,
  // end the worker, non-zero, with a message.
  process.stderr.write(`${err.message}\n`);
  process.exit(2);
}
