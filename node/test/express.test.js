'use strict';

// An Express app runs under the real watchdog unchanged: once with serveListener(app) in
// the app's own file, once through the launcher, which finds the app in the exports.

const path = require('node:path');
const fs = require('node:fs');
const os = require('node:os');
const { startWatchdog, NODE_DIR } = require('./support/watchdog');

const APP = path.join(NODE_DIR, 'test/apps/express-app.js');

describe.each([
  ['serveListener(app)', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'afterburn-express-'));
    const main = path.join(dir, 'main.js');
    fs.writeFileSync(main, `require(${JSON.stringify(require.resolve('..'))}).serveListener(require(${JSON.stringify(APP)}));\n`);
    return [process.execPath, main];
  }],
  ['the afterburn launcher', () => [process.execPath, path.join(NODE_DIR, 'bin/afterburn.js'), APP]],
])('Express under the watchdog, served by %s', (_name, command) => {
  let wd;
  beforeAll(async () => {
    wd = await startWatchdog(command());
  });
  afterAll(async () => {
    if (wd) expect((await wd.stop()).code).toBe(0);
  });

  test('routes, params, query and the request id', async () => {
    const res = await fetch(`${wd.url}/hello/ada?x=1`, { headers: { 'X-Request-Id': 'express-rid-1' } });
    expect(res.status).toBe(200);
    expect(res.headers.get('x-powered')).toBe('afterburn');
    expect(res.headers.get('afterburn-request-id')).toBe('express-rid-1');
    expect(await res.json()).toEqual({ hello: 'ada', query: { x: '1' }, requestId: 'express-rid-1' });
  });

  test('a JSON body through express.json()', async () => {
    const res = await fetch(`${wd.url}/sum`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ numbers: [1, 2, 3.5] }),
    });
    expect(res.status).toBe(201);
    expect(await res.json()).toEqual({ sum: 6.5 });
  });

  test('repeated Set-Cookie fields stay separate', async () => {
    const res = await fetch(`${wd.url}/cookies`);
    expect(res.headers.getSetCookie()).toEqual(['a=1; Path=/', 'b=2; Path=/']);
  });

  test("Express's own error handler answers a throwing route, and the worker keeps serving", async () => {
    const res = await fetch(`${wd.url}/boom`);
    expect(res.status).toBe(500);
    const again = await fetch(`${wd.url}/hello/again`);
    expect(again.status).toBe(200);
  });
});
