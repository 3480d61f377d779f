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

test('the launcher without an app prints its usage', async () => {
  const { code, stderr } = await run([LAUNCHER]);
  expect(code).toBe(2);
  expect(stderr).toContain('usage: afterburn');
});
