'use strict';

// Start-up failures, seen from outside the process: the exit status and the message on
// stderr (PROTOCOL.md §2.3, §9.1).

const path = require('node:path');
const { spawn } = require('node:child_process');
const { NODE_DIR } = require('./support/watchdog');

const LAUNCHER = path.join(NODE_DIR, 'bin/afterburn.js');

function run(args, env = {}) {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, args, {
      cwd: NODE_DIR,
      env: { ...process.env, ...env },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (c) => { stderr += c; });
    child.once('close', (code) => resolve({ code, stderr }));
  });
}

test.each([
  ['abc'],
  ['3'],
  ['3,4,5'],
  ['-1,4'],
])('a bad AFTERBURN_FDS %j ends the worker non-zero with a message (§2.3)', async (value) => {
  const { code, stderr } = await run([LAUNCHER, 'test/apps/register-app.js'], { AFTERBURN_FDS: value });
  expect(code).not.toBe(0);
  expect(stderr).toContain('AFTERBURN_FDS');
});

test('an app that fails to load exits non-zero with its stack on stderr (§9.1)', async () => {
  const { code, stderr } = await run([LAUNCHER, 'test/apps/load-fails.js'], { AFTERBURN_FDS: '0,1' });
  expect(code).not.toBe(0);
  expect(stderr).toContain('cannot reach the model store');
  expect(stderr).toMatch(/load-fails\.js:\d+/);
});

test('an app that neither serves nor exports a handler is an initialisation failure', async () => {
  const { code, stderr } = await run([LAUNCHER, 'test/apps/exports-nothing.js'], { AFTERBURN_FDS: '0,1' });
  expect(code).not.toBe(0);
  expect(stderr).toContain('neither called serve()');
});

test.each([
  [['--shape', 'nope', 'test/apps/register-app.js'], 2, '--shape must be one of openfaas, lambda, cloudevents, not "nope"'],
  [['--shape'], 2, 'usage: afterburn [--shape openfaas|lambda|cloudevents]'],
  [['--shape=lambda', 'test/apps/exports-nothing.js'], 1, '--shape lambda: test/apps/exports-nothing.js exports no handler; want a function named handler'],
  // A Lambda module without --shape: its shape cannot be guessed, but the message names it.
  [['test/apps/shapes/lambda-url-tutorial/index.js'], 1, 'it exports handler: a Lambda function? run afterburn --shape lambda'],
  [['test/apps/shapes/knative-cloudevents/index.js'], 1, 'it exports handle: a Knative function? run afterburn --shape cloudevents'],
])('afterburn %j exits %i: %s', async (args, status, message) => {
  const { code, stderr } = await run([LAUNCHER, ...args], { AFTERBURN_FDS: '0,1' });
  expect({ code, stderr }).toEqual({ code: status, stderr: expect.stringContaining(message) });
});

test('the launcher without an app prints its usage', async () => {
  const { code, stderr } = await run([LAUNCHER]);
  expect(code).toBe(2);
  expect(stderr).toContain('usage: afterburn');
});

// Issue 22: a wrapper between the watchdog and the worker (npx, npm exec) that does not keep
// fds 3 and 4. The worker must say so at once, and what to run instead, not die reading.
describe('descriptors that are not the protocol pipes end the worker at once (§2.2)', () => {
  const fs = require('node:fs');
  const os = require('node:os');
  const { execFileSync } = require('node:child_process');

  function runWith(args, stdio, env = {}) {
    return new Promise((resolve) => {
      const child = spawn(process.execPath, args, {
        cwd: NODE_DIR,
        env: { ...process.env, AFTERBURN_PROTOCOL: '1', AFTERBURN_FDS: '3,4', ...env },
        stdio: ['ignore', 'ignore', 'pipe', ...stdio],
      });
      let stderr = '';
      child.stderr.on('data', (c) => { stderr += c; });
      child.once('close', (code) => {
        for (const fd of opened.splice(0)) fs.closeSync(fd);
        resolve({ code, stderr });
      });
    });
  }

  const opened = []; // every descriptor the cases open, closed once their worker has exited

  // A FIFO's two ends, opened without waiting (read end non-blocking first).
  function fifo() {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'afterburn-fds-check-'));
    const name = path.join(dir, 'p');
    execFileSync('mkfifo', [name]);
    const r = fs.openSync(name, fs.constants.O_RDONLY | fs.constants.O_NONBLOCK);
    const w = fs.openSync(name, fs.constants.O_WRONLY);
    fs.rmSync(dir, { recursive: true });
    opened.push(r, w);
    return { r, w };
  }

  const devNull = () => {
    const fd = fs.openSync('/dev/null', 'r+');
    opened.push(fd);
    return fd;
  };
  const launcher = [LAUNCHER, 'test/apps/register-app.js'];
  const direct = ['test/apps/lanes-app.js', 'fetch'];

  test.each([
    ['the launcher, fd 3 /dev/null and fd 4 not passed', launcher, () => [devNull()], /fd 3 should be the request pipe but it is a character device \(\/dev\/null\), not a pipe/],
    ['the launcher, neither passed', launcher, () => [], /fd 3 should be the request pipe but (it is not open|it is .*, not a pipe)/],
    ['serve() itself, fd 4 not open', direct, () => [fifo().r, 'ignore'], /fd 4 should be the response pipe but it is not open|fd 4 should be the response pipe but it is .*, not a pipe/],
    ['serve() itself, the pipe ends swapped', direct, () => { const p = fifo(); const q = fifo(); return [p.w, q.r]; }, /fd 3 should be the request pipe but it is the write end of a pipe/],
    ['a lane\'s descriptors not passed', direct, () => { const p = fifo(); const q = fifo(); return [p.r, q.w]; }, /fd 5 should be lane 2's request pipe but/],
  ])('%s', async (_case, args, stdio, message) => {
    const env = _case.startsWith('a lane') ? { AFTERBURN_STREAM_FDS: '5,6', AFTERBURN_STREAM_CANCEL_FD: '7' } : {};
    const { code, stderr } = await runWith(args, stdio(), env);
    expect(code).toBe(2);
    expect(stderr).toMatch(message);
    expect(stderr).toContain('npx and npm exec');
    expect(stderr).toContain('afterburn-watchdog -- node node_modules/afterburn-runtime/bin/afterburn.js app.js');
  });
});
