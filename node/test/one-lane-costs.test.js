'use strict';

// What one request costs a worker on one lane, in counts that do not depend on the machine's
// speed (issue 30), for the smallest fetch-style handler: the event-loop work a request makes
// (async resources: no timer, no immediate, no nextTick object, no promise) and the system
// calls of the event loop's thread (one read of the request, one write of the response; the
// poll around them is not judged). A change that adds a timer per request or splits a response
// into two writes fails here.

const { spawn, spawnSync } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { startLanes, get, HANDSHAKE } = require('./support/lanes');

const N = 200;
const APP = ['-r', './test/support/count-async.js', 'test/apps/hello.js'];

let worker = null;
afterEach(() => {
  if (worker !== null) worker.kill();
  worker = null;
});

// Sends n requests on lane 1, each once the one before is answered; `w.answered` counts the
// responses on lane 1 so far, the handshake's included.
async function serveOneByOne(w, n) {
  for (let i = 0; i < n; i++) {
    w.lane(1).send(get('/hello', { id: `r${w.answered}`, token: `t${w.answered}` }));
    w.answered++;
    await w.lane(1).responses(w.answered); // eslint-disable-line no-await-in-loop
  }
}

const hasStrace = spawnSync('strace', ['-V']).status === 0;

test('a request on one lane makes no timer, immediate, nextTick object or promise', async () => {
  worker = startLanes(APP, { lanes: 1 });
  const w = worker;
  try {
    w.lane(1).send(HANDSHAKE);
    await w.lane(1).responses(1);
    w.answered = 1;
    await serveOneByOne(w, 20); // warm: the first requests load code and fill caches
    process.kill(w.pid, 'SIGUSR2');
    await serveOneByOne(w, N);
    process.kill(w.pid, 'SIGUSR2');
    expect(await w.endAll()).toEqual({ code: 0, signal: null });
    const m = /async-resources (\{.*\})/.exec(w.stderr());
    expect(m).not.toBeNull();
    const counts = JSON.parse(m[1]);
    // Nothing is scheduled for a handler that returns its Response at once: no timer (the
    // deadline's is made only when ctx.signal is asked for), no immediate, no nextTick, and
    // no promise of the library's own.
    expect(counts).toEqual({});
  } catch (err) {
    err.message += `\nworker stderr:\n${w.stderr()}`;
    throw err;
  }
});

(hasStrace ? test : test.skip)('one read and one write per small request on one lane (strace -c)', async () => {
  worker = startLanes(APP, { lanes: 1 });
  const w = worker;
  const out = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'afterburn-strace-')), 'counts');
  w.lane(1).send(HANDSHAKE);
  await w.lane(1).responses(1);
  w.answered = 1;
  await serveOneByOne(w, 20);
  const strace = spawn('strace', ['-c', '-e', 'trace=read,write,readv,writev', '-o', out, '-p', String(w.pid)], { stdio: ['ignore', 'ignore', 'pipe'] });
  let attached = '';
  await new Promise((resolve) => strace.stderr.on('data', (d) => { attached += d; if (/attached/.test(attached)) resolve(); }));
  await serveOneByOne(w, N);
  const done = new Promise((resolve) => strace.once('close', resolve));
  strace.kill('SIGINT');
  await done;
  expect(await w.endAll()).toEqual({ code: 0, signal: null });
  const calls = {};
  for (const line of fs.readFileSync(out, 'utf8').split('\n')) {
    const f = line.trim().split(/\s+/);
    if (f.length >= 5 && /^(read|write|readv|writev)$/.test(f[f.length - 1])) calls[f[f.length - 1]] = Number(f[3]);
  }
  // strace's attaching and detaching may catch a call or two on either side of the N.
  expect([calls.readv ?? 0, calls.writev ?? 0]).toEqual([0, 0]);
  for (const name of ['read', 'write']) {
    expect([name, calls[name] ?? 0]).toEqual([name, expect.any(Number)]);
    expect(calls[name]).toBeGreaterThanOrEqual(N);
    expect(calls[name]).toBeLessThanOrEqual(N + 4);
  }
});
