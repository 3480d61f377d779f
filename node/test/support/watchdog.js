'use strict';

// Starts the real watchdog (go/bin/afterburn-watchdog) on 127.0.0.1 with a Node worker,
// waits on its own signals — the "listening on ADDR" log line, then /_/ready — and never
// on a fixed sleep.

const { spawn } = require('node:child_process');
const path = require('node:path');

const REPO = path.resolve(__dirname, '../../..');
const WATCHDOG = path.join(REPO, 'go/bin/afterburn-watchdog');
const NODE_DIR = path.resolve(__dirname, '../..');

/**
 * @param {string[]} worker the worker command, e.g. [process.execPath, 'app.js']
 * @param {{flags?: string[], env?: object}} [options]
 */
async function startWatchdog(worker, { flags = [], env = {} } = {}) {
  const child = spawn(WATCHDOG, ['-port', '0', '-metrics_port', '0', '-listen_host', '127.0.0.1', '-workers', '1', ...flags, '--', ...worker], {
    cwd: NODE_DIR,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let log = '';
  const exited = new Promise((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
  const address = await new Promise((resolve, reject) => {
    child.stderr.setEncoding('utf8');
    child.stderr.on('data', (text) => {
      log += text;
      const m = /listening on (\S+)/.exec(log);
      if (m) resolve(m[1]);
    });
    exited.then(({ code }) => reject(new Error(`watchdog exited (${code}) before listening:\n${log}`)));
  });
  const url = `http://${address}`;
  const watchdog = {
    url,
    log: () => log,
    /** Resolves once the log matches re (the log is the watchdog's signal for worker output). */
    async waitLog(re) {
      while (!re.test(log)) await new Promise((resolve) => child.stderr.once('data', resolve));
    },
    async stop() {
      child.kill('SIGTERM');
      return exited;
    },
  };
  for (;;) {
    const ready = await fetch(`${url}/_/ready`).then((r) => r.status, () => 0);
    if (ready === 200) break;
    if (child.exitCode !== null) throw new Error(`watchdog exited:\n${log}`);
    await new Promise((resolve) => setTimeout(resolve, 10)); // poll interval, as the conformance suite
  }
  return watchdog;
}

module.exports = { startWatchdog, NODE_DIR, REPO };
