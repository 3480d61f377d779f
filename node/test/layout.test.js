'use strict';

// The layout of lib/ (README.md, "How it is built"): which module may reach which. Read from
// the source, every require('./…') counted, lazy ones too, so a require added inside a
// function breaks the rule as surely as one at the top.

const fs = require('node:fs');
const path = require('node:path');

const { Lifecycle } = require('../lib/lifecycle');

const LIB = path.join(__dirname, '..', 'lib');

/** The lib modules `name` requires, directly. */
function requires(name) {
  const text = fs.readFileSync(path.join(LIB, name), 'utf8');
  return [...text.matchAll(/require\('\.\/([\w-]+)(?:\.js)?'\)/g)].map((m) => `${m[1]}.js`);
}

/** Every lib module `name` reaches through requires, itself left out. */
function reach(name) {
  const seen = new Set();
  const todo = [name];
  while (todo.length > 0) {
    for (const next of requires(todo.pop())) {
      if (!seen.has(next)) {
        seen.add(next);
        todo.push(next);
      }
    }
  }
  seen.delete(name);
  return [...seen].sort();
}

describe('the layout of lib/', () => {
  test('the require graph is read: connection.js reaches context.js and guard.js', () => {
    expect(reach('connection.js')).toEqual(expect.arrayContaining(['context.js', 'guard.js', 'errors.js']));
  });

  // ctx is every core's (listener and fetch style): it reaches undici through undici.js,
  // not through the fetch core.
  test.each([
    ['context.js', /^fetch/],
    ['undici.js', /^fetch/],
    ['connection.js', /^fetch/],
  ])('%s reaches no module matching %s', (name, banned) => {
    expect(reach(name).filter((m) => banned.test(m))).toEqual([]);
  });

  // The handler-shape adapters (§13) are handlers around the user's: they change nothing on
  // the pipes, so they reach no core, no guard, no lifecycle.
  test.each(['shape.js', 'shape-openfaas.js', 'shape-lambda.js', 'shape-cloudevents.js'])('%s reaches no core', (name) => {
    expect(reach(name).filter((m) => /^(fetch-|connection|lifecycle|guard|framer|child)/.test(m))).toEqual([]);
  });

  // The guard only checks (§4.3); the fetch core's framing marks are made in framer.js.
  test('guard.js requires errors.js alone and exports the FrameGuard alone, no marks', () => {
    expect(requires('guard.js')).toEqual(['errors.js']);
    expect(Object.keys(require('../lib/guard'))).toEqual(['FrameGuard']);
  });

  // One connection lifecycle for every core (lifecycle.js): its transitions are defined there
  // once, no core keeps a copy, and each core answers every question the lifecycle asks.
  const TRANSITIONS = ['end', '_output', '_sinkFailed', '_finished', '_handshake', '_handlerFailed', '_fail',
    '_settleFailure', '_writeErrorAndStop', '_internalError', '_stop'];
  const HOOKS = ['push', '_failAfterParsed', '_maybeFinish', '_closeExchange', '_nextRequest', '_owesEarlier',
    '_holdInput', '_halt', '_answerHandlerError', '_flushPending'];

  test('Lifecycle defines every transition', () => {
    expect(TRANSITIONS.filter((m) => typeof Lifecycle.prototype[m] !== 'function')).toEqual([]);
  });

  test.each([
    ['connection.js', 'Connection'],
    ['fetch-connection.js', 'FetchConnection'],
    ['fetch-listener.js', 'FetchListenerConnection'],
  ])('%s: %s is a Lifecycle, redefines none of its transitions and answers it', (file, name) => {
    const Core = require(path.join(LIB, file))[name];
    expect(Core.prototype).toBeInstanceOf(Lifecycle);
    const own = [];
    for (let p = Core.prototype; p !== Lifecycle.prototype; p = Object.getPrototypeOf(p)) {
      own.push(...Object.getOwnPropertyNames(p));
    }
    expect(own.filter((m) => TRANSITIONS.includes(m))).toEqual([]);
    expect(HOOKS.filter((m) => typeof Core.prototype[m] !== 'function')).toEqual([]);
  });
});
