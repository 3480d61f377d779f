'use strict';

// The layout of lib/ (README.md, "How it is built"): which module may reach which. Read from
// the source, every require('./…') counted, lazy ones too, so a require added inside a
// function breaks the rule as surely as one at the top.

const fs = require('node:fs');
const path = require('node:path');

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

  // The guard only checks (§4.3); the fetch core's framing marks are made in framer.js.
  test('guard.js requires errors.js alone and exports the FrameGuard alone, no marks', () => {
    expect(requires('guard.js')).toEqual(['errors.js']);
    expect(Object.keys(require('../lib/guard'))).toEqual(['FrameGuard']);
  });
});
