'use strict';

// docs/migrating-from-of-watchdog.md's Express example, read from the doc and run as it is
// under the real watchdog (issue 32: the doc once said serve(app), which hands an Express app
// an undici Request). The project it runs in has express and afterburn-runtime installed, as
// a user's would: linked to this checkout's.

const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { startWatchdog, NODE_DIR, REPO } = require('./support/watchdog');

const DOC = path.join(REPO, 'docs/migrating-from-of-watchdog.md');

/** The doc's ```js block that serves an Express app. */
function expressExample() {
  const blocks = [...fs.readFileSync(DOC, 'utf8').matchAll(/```js\n([\s\S]*?)```/g)].map((m) => m[1]);
  const found = blocks.filter((b) => b.includes("require('express')"));
  if (found.length !== 1) throw new Error(`${DOC}: ${found.length} js blocks with an Express app; want 1`);
  return found[0];
}

test('the doc serves Express with serveListener, not serve', () => {
  const code = expressExample();
  expect(code).toContain('serveListener(app)');
  expect(fs.readFileSync(DOC, 'utf8')).not.toMatch(/`serve\(app\)`/);
});

test("the doc's Express example answers under the watchdog", async () => {
  const project = fs.mkdtempSync(path.join(os.tmpdir(), 'afterburn-migration-doc-'));
  fs.mkdirSync(path.join(project, 'node_modules'));
  fs.symlinkSync(NODE_DIR, path.join(project, 'node_modules/afterburn-runtime'));
  fs.symlinkSync(path.join(NODE_DIR, 'node_modules/express'), path.join(project, 'node_modules/express'));
  fs.writeFileSync(path.join(project, 'index.js'), expressExample());
  const wd = await startWatchdog([process.execPath, path.join(project, 'index.js')]);
  try {
    const res = await fetch(`${wd.url}/echo`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"n":1}' });
    expect({ status: res.status, body: await res.json(), log: wd.log() }).toEqual({ status: 200, body: { got: { n: 1 } }, log: wd.log() });
  } finally {
    expect((await wd.stop()).code).toBe(0);
  }
});
