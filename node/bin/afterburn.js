#!/usr/bin/env node
'use strict';

// The launcher: `afterburn app.js [args...]`.
//
// It protects stdout before the app loads (lib/register.js), then loads the app (CommonJS
// or ESM). An app that calls serve() or serveListener() itself is left to it. Otherwise the
// app's export (default export first) is served:
//
//   { fetch(request, ctx) }          fetch-style (Workers, Hono, Deno style)
//   an Express or Connect app        serveListener(app)
//   a Koa app                        serveListener(app.callback())
//   an http.Server                   its 'request' listeners
//   a function                       fetch-style: (request, ctx) => Response
//
// An app that exports none of these is expected to call serve() itself, possibly after an
// asynchronous initialisation.

require('../lib/register');

const path = require('node:path');
const { pathToFileURL } = require('node:url');
const { serve, serveListener } = require('..');
const { isRunning } = require('../lib/child');

function usage() {
  process.stderr.write('usage: afterburn APP.js [ARGS...]\n' +
    '  serves APP under an AfterBurn watchdog (see afterburn-runtime README)\n');
  process.exit(2);
}

function serveExport(mod, file) {
  let app = mod;
  if (app && typeof app === 'object' && 'default' in app) app = app.default;
  if (app && typeof app === 'object' && 'default' in app && typeof app.fetch !== 'function') app = app.default;
  if (app && typeof app.fetch === 'function' && typeof app.listen !== 'function') {
    return serve((request, ctx) => app.fetch(request, ctx));
  }
  if (typeof app === 'function' && typeof app.listen === 'function' && typeof app.callback === 'function') {
    return serveListener(app.callback()); // Koa
  }
  if (typeof app === 'function' && (typeof app.handle === 'function' || typeof app.listen === 'function')) {
    return serveListener(app); // Express, Connect
  }
  if (app && typeof app === 'object' && typeof app.listen === 'function' && typeof app.emit === 'function') {
    return serveListener(app); // http.Server
  }
  if (typeof app === 'function') return serve(app);
  // Nothing to serve: the app calls serve() itself, perhaps after an asynchronous
  // initialisation. If the event loop runs dry first, it never will.
  process.once('beforeExit', () => {
    if (isRunning()) return;
    process.stderr.write(`afterburn: ${file} neither called serve() nor exports a handler, an app or { fetch }\n`);
    process.exit(1);
  });
  return undefined;
}

async function main() {
  const [file, ...args] = process.argv.slice(2);
  if (!file || file === '-h' || file === '--help') usage();
  const resolved = path.resolve(file);
  process.argv = [process.argv[0], resolved, ...args];
  let mod;
  try {
    mod = await import(pathToFileURL(resolved).href);
  } catch (err) {
    // PROTOCOL.md §9.1: a failed initialisation exits non-zero with the reason on stderr.
    process.stderr.write(`afterburn: loading ${file} failed:\n${err && err.stack ? err.stack : err}\n`);
    process.exit(1);
  }
  if (!isRunning()) serveExport(mod, file);
}

main();
