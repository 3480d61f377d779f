'use strict';

// Stdout protection (PROTOCOL.md §2.4) and the launcher, under the real watchdog: prints at
// import time and in handlers — console.log and raw writes to fd 1 — land in the logs and
// never in a response, in fd mode and in stdio mode. Also the legacy set-up (§11.1) with no
// AFTERBURN_* variables, driven by hand over the worker's stdin and stdout.

const path = require('node:path');
const { spawn } = require('node:child_process');
const { startWatchdog, NODE_DIR } = require('./support/watchdog');
const { readResponses } = require('../lib/response-reader');

const LAUNCHER = path.join(NODE_DIR, 'bin/afterburn.js');

describe.each([
  ['fd mode', []],
  ['stdio mode', ['-stdio']],
])('launcher with an ESM { fetch } app, %s', (_mode, flags) => {
  let wd;
  beforeAll(async () => {
    wd = await startWatchdog([process.execPath, LAUNCHER, 'test/apps/printing-app.mjs'], { flags });
  });
  afterAll(async () => {
    if (wd) expect((await wd.stop()).code).toBe(0);
  });

  test('responses are intact while the app prints', async () => {
    for (const id of ['print-1', 'print-2', 'print-3']) {
      const res = await fetch(`${wd.url}/p/${id}`, { method: 'DELETE', headers: { 'X-Request-Id': id } });
      expect(res.status).toBe(200);
      expect(await res.json()).toEqual({ id, path: `/p/${id}`, method: 'DELETE' });
    }
  });

  test('every print reaches the log, tagged with the worker', async () => {
    await fetch(`${wd.url}/once-more`);
    await wd.waitLog(/w1[^\n]*in-handler raw fd 1/);
    for (const text of ['import-time console.log', 'import-time raw fd 1', 'in-handler console.log']) {
      expect(wd.log()).toMatch(new RegExp(`w1[^\\n]*${text}`));
    }
  });

  test('a stray rejection is logged and the worker was never replaced', async () => {
    await wd.waitLog(/unhandled promise rejection/);
    expect(wd.log().match(/import-time console\.log/g)).toHaveLength(1);
    expect(wd.log()).not.toMatch(/restart|exited or closed/);
  });
});

describe('node --require afterburn-runtime/register, stdio mode', () => {
  let wd;
  beforeAll(async () => {
    wd = await startWatchdog([process.execPath, '--require', 'afterburn-runtime/register', 'test/apps/register-app.js'],
      { flags: ['-stdio'] });
  });
  afterAll(async () => {
    if (wd) expect((await wd.stop()).code).toBe(0);
  });

  test('import-time prints are logged, not taken as protocol bytes', async () => {
    const res = await fetch(`${wd.url}/r`, { method: 'POST', body: 'body' });
    expect(await res.text()).toBe('POST /r body');
    await wd.waitLog(/register in-handler console\.log/);
    expect(wd.log()).toMatch(/w1[^\n]*register import-time console\.log/);
    expect(wd.log()).toMatch(/w1[^\n]*register import-time raw fd 1/);
    expect(wd.log()).not.toMatch(/discard/i); // nothing came before the handshake reply (§3.3)
  });
});

describe('legacy watchdog (§11.1): no AFTERBURN_* variables, requests on stdin', () => {
  test('console.log in a handler stays off stdout; EOF ends the worker with 0', async () => {
    const env = { ...process.env };
    for (const k of Object.keys(env)) if (k.startsWith('AFTERBURN_')) delete env[k];
    const child = spawn(process.execPath, ['test/apps/register-app.js'], { cwd: NODE_DIR, env, stdio: ['pipe', 'pipe', 'pipe'] });
    const out = [];
    let err = '';
    child.stdout.on('data', (c) => out.push(c));
    child.stderr.on('data', (c) => { err += c; });
    const exited = new Promise((resolve) => child.once('exit', resolve));
    // As Go's Request.Write: no handshake, no request id, possibly no framing.
    child.stdin.end('GET /legacy HTTP/1.1\r\nHost: fn\r\nUser-Agent: Go-http-client/1.1\r\n\r\n' +
      'POST /two HTTP/1.1\r\nHost: fn\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n');
    expect(await exited).toBe(0);
    // Without the launcher, import-time prints come before protection; the watchdog skips
    // everything before the first "HTTP/1.1 " (§3.3). Nothing may follow it but responses.
    const stdout = Buffer.concat(out);
    const start = stdout.indexOf('HTTP/1.1 ');
    expect(stdout.subarray(0, start).toString()).toContain('register import-time console.log');
    const { responses, rest } = readResponses(stdout.subarray(start));
    expect(responses.map((r) => r.body.toString())).toEqual(['GET /legacy ', 'POST /two abc']);
    expect(rest.length).toBe(0);
    expect(err).toContain('register in-handler console.log');
  });
});
