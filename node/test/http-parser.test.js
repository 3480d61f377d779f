'use strict';

// Which fetch core serve() runs (lib/http-parser.js, lib/fetch-core.js): the one on Node's
// internal _http_common where it loads cleanly, the one on the public http machinery where
// it is gone (nodejs/node#58534) or warns that it is deprecated (PR #58535), without the
// warning reaching the user. The public core runs every vector in fetch-core.test.js,
// trailers.test.js and raw-request.test.js; here, the choice.

const { loadHTTPParser } = require('../lib/http-parser');
const { fetchCore } = require('../lib/fetch-core');
const { FetchConnection } = require('../lib/fetch-connection');
const { FetchListenerConnection } = require('../lib/fetch-listener');
const { invoke } = require('../testing');

const real = require('_http_common');
// What reaches process.emitWarning once the loader has put its own back: what a user sees.
let shown;
let emitWarning;
beforeEach(() => {
  shown = [];
  emitWarning = process.emitWarning;
  process.emitWarning = (...args) => shown.push(args);
});
afterEach(() => {
  process.emitWarning = emitWarning;
});

test('this Node\'s _http_common loads cleanly: the fetch core drives it', () => {
  expect(loadHTTPParser()).toEqual({ HTTPParser: real.HTTPParser, methods: real.methods });
  expect(fetchCore()).toBe(FetchConnection);
});

test.each([
  ['require throws (the module is internal-only)', () => {
    const err = new Error("Cannot find module '_http_common'");
    err.code = 'MODULE_NOT_FOUND';
    throw err;
  }],
  ['require emits a DeprecationWarning (type argument)', () => {
    process.emitWarning('_http_common is deprecated', 'DeprecationWarning', 'DEP0999');
    return real;
  }],
  ['require emits a DeprecationWarning (options object)', () => {
    process.emitWarning('_http_common is deprecated', { type: 'DeprecationWarning', code: 'DEP0999' });
    return real;
  }],
  ['require emits a DeprecationWarning (an Error)', () => {
    const w = new Error('_http_common is deprecated');
    w.name = 'DeprecationWarning';
    process.emitWarning(w);
    return real;
  }],
  ['the module has another shape', () => ({ HTTPParser: function HTTPParser() {}, methods: [] })],
])('%s: the public http core, and no warning shown', (_case, load) => {
  expect(loadHTTPParser(load)).toBeNull();
  expect(fetchCore(() => loadHTTPParser(load))).toBe(FetchListenerConnection);
  expect(shown).toEqual([]);
});

test('another warning emitted while loading is passed on', () => {
  const parser = loadHTTPParser(() => {
    process.emitWarning('something else', 'ExperimentalWarning');
    return real;
  });
  expect(parser).not.toBeNull();
  expect(shown).toEqual([['something else', 'ExperimentalWarning']]);
});

test('process.emitWarning is restored after loading, whatever happened', () => {
  const before = process.emitWarning; // the test's own (beforeEach)
  loadHTTPParser(() => { throw new Error('x'); });
  loadHTTPParser(() => real);
  expect(process.emitWarning).toBe(before);
});

test('serve\'s in-process runner (testing.invoke) answers through the chosen core', async () => {
  const res = await invoke((request, ctx) => new Response(`${ctx.rawTarget} ${request.method}`), 'http://fn/b?x=1');
  expect(await res.text()).toBe('/b?x=1 GET');
});
