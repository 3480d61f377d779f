'use strict';

// onShutdown: hooks run, awaited, when the watchdog closes the worker's request pipe at
// shutdown (PROTOCOL.md §9.4), before the worker exits 0; the watchdog's shutdown_timeout
// bounds them (a hook that never ends is killed with the worker).

const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { startWatchdog, NODE_DIR } = require('./support/watchdog');
const { onShutdown } = require('..');

const APP = path.join(NODE_DIR, 'test/apps/shutdown-app.js');

function outFile() {
  return path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'afterburn-shutdown-')), 'hooks.txt');
}

test('the hooks run before the worker exits 0; a failing hook is logged', async () => {
  const out = outFile();
  const wd = await startWatchdog([process.execPath, APP], { env: { SHUTDOWN_OUT: out } });
  expect(await (await fetch(`${wd.url}/`)).text()).toBe('ok');
  const { code } = await wd.stop();
  const log = wd.log();
  expect({ code, hooks: fs.readFileSync(out, 'utf8').split('\n').sort(), log }).toEqual({
    code: 0, hooks: ['', 'closed', 'flushed after 300 ms'], log,
  });
  expect(log).toMatch(/w1 pid \d+ stopped: exit status 0/);
  expect(log).toMatch(/afterburn: a shutdown hook failed\n.*Error: this hook fails/);
});

test('a hook that never ends is cut at the end of shutdown_timeout; the watchdog still exits 0', async () => {
  const out = outFile();
  const wd = await startWatchdog([process.execPath, APP], { env: { SHUTDOWN_OUT: out, SHUTDOWN_HANG: '1' }, flags: ['-shutdown_timeout', '1s'] });
  const started = Date.now();
  const { code } = await wd.stop();
  const log = wd.log();
  expect({ code, log }).toEqual({ code: 0, log });
  expect(Date.now() - started).toBeLessThan(5000);
  expect(log).toMatch(/still running after shutdown_timeout: killing it/);
  expect(fs.readFileSync(out, 'utf8')).toContain('flushed after 300 ms');
});

test('onShutdown takes a function', () => {
  expect(() => onShutdown('flush')).toThrow(new TypeError('afterburn: onShutdown(hook) needs a function'));
});
