#!/usr/bin/env node
'use strict';

// The launcher: `afterburn [--shape openfaas|lambda|cloudevents] app.js [args...]`.
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
//
// --shape NAME serves a function written for another platform through its adapter
// (PROTOCOL.md §13), taking the export that platform takes:
//
//   --shape openfaas      module.exports = async (event, context) => ...   (OpenFaaS templates)
//   --shape lambda        exports.handler = async (event, context) => ...  (AWS Lambda, HTTP 2.0)
//   --shape cloudevents   module.exports = { handle }: (context, event)     (Knative Functions)
//
// each, failing its named export, the module's default export or module.exports if that is
// a function. A function's shape cannot be told from its parameters, so it is never guessed.

require('../lib/register');

const path = require('node:path');
const { pathToFileURL } = require('node:url');
const { serve, serveListener, openfaas, lambda, cloudevents } = require('..');
const { isRunning } = require('../lib/child');

// --shape NAME: the adapter and the export it takes first.
const SHAPES = {
  openfaas: { adapter: openfaas, name: null },
  lambda: { adapter: lambda, name: 'handler' },
  cloudevents: { adapter: cloudevents, name: 'handle' },
};

function usage(problem) {
  if (problem) process.stderr.write(`afterburn: ${problem}\n`);
  process.stderr.write('usage: afterburn [--shape openfaas|lambda|cloudevents] APP.js [ARGS...]\n' +
    '  serves APP under an AfterBurn watchdog (see afterburn-runtime README)\n');
  process.exit(2);
}

/** The launcher's own options, before the app's file: { shape, rest }. */
function parseArgs(argv) {
  let shape = null;
  let i = 0;
  for (; i < argv.length && argv[i].startsWith('--shape'); i++) {
    let value;
    if (argv[i] === '--shape') value = argv[++i];
    else if (argv[i].startsWith('--shape=')) value = argv[i].slice('--shape='.length);
    else usage(`unknown option ${argv[i]}`);
    if (!Object.hasOwn(SHAPES, value || '')) usage(`--shape must be one of ${Object.keys(SHAPES).join(', ')}, not ${JSON.stringify(value)}`);
    shape = value;
  }
  return { shape, rest: argv.slice(i) };
}

/** --shape: the platform's export of the module, served through its adapter. */
function serveShape(mod, shape, file) {
  const { adapter, name } = SHAPES[shape];
  const candidates = [];
  const main = mod && typeof mod === 'object' && 'default' in mod ? mod.default : mod;
  if (name !== null) candidates.push(mod && mod[name], main && main[name]);
  candidates.push(main);
  const fn = candidates.find((c) => typeof c === 'function');
  if (fn === undefined) {
    const want = name === null ? 'a function as module.exports (or the default export)' : `a function named ${name} (or one as module.exports)`;
    process.stderr.write(`afterburn: --shape ${shape}: ${file} exports no handler; want ${want}\n`);
    process.exit(1);
  }
  try {
    serve(adapter(fn));
  } catch (err) {
    // PROTOCOL.md §9.1: e.g. cloudevents without its SDK installed.
    process.stderr.write(`afterburn: ${err && err.message ? err.message : err}\n`);
    process.exit(1);
  }
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
    let hint = '';
    if (app && typeof app.handler === 'function') hint = ' (it exports handler: a Lambda function? run afterburn --shape lambda)';
    else if (app && typeof app.handle === 'function') hint = ' (it exports handle: a Knative function? run afterburn --shape cloudevents)';
    process.stderr.write(`afterburn: ${file} neither called serve() nor exports a handler, an app or { fetch }${hint}\n`);
    process.exit(1);
  });
  return undefined;
}

async function main() {
  const { shape, rest } = parseArgs(process.argv.slice(2));
  const [file, ...args] = rest;
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
  if (isRunning()) return;
  if (shape !== null) serveShape(mod, shape, file);
  else serveExport(mod, file);
}

main();
