'use strict';

// The fixture's late writers (conformance/README.md, "The fixture contract"; PROTOCOL.md
// §4.6): /garbage?when=late and /garbage?when=child answer as usual, then a timer of the
// worker, or a child it started, writes a stale response to the response pipe in one write.
// The fixture runs as the watchdog would run it, on two named pipes, in fd mode and in stdio
// mode; the test plays the watchdog and waits on the pipe's own bytes.

const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const net = require('node:net');
const { spawn, execFileSync } = require('node:child_process');
const { readResponses } = require('../lib/response-reader');
const { NODE_DIR } = require('./support/watchdog');

const FIXTURE = path.join(NODE_DIR, 'test/fixture/fixture.js');
const HANDSHAKE = 'OPTIONS * HTTP/1.1\r\nHost: afterburn\r\nAfterBurn-Handshake: 1\r\nContent-Length: 0\r\n\r\n';
const STALE = 'HTTP/1.1 200 OK\r\nContent-Length: 7\r\n\r\n"stale"';
const { O_RDONLY, O_WRONLY, O_NONBLOCK } = fs.constants;

/** Starts the fixture on two named pipes; `fds` is AFTERBURN_FDS, "3,4" or "0,1". */
function startFixture(fds) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'afterburn-late-'));
  const reqPath = path.join(dir, 'req');
  const respPath = path.join(dir, 'resp');
  execFileSync('mkfifo', [reqPath, respPath]);
  // Read ends first (a non-blocking open needs no writer), then the write ends.
  const reqR = fs.openSync(reqPath, O_RDONLY | O_NONBLOCK);
  const reqW = fs.openSync(reqPath, O_WRONLY);
  const respR = fs.openSync(respPath, O_RDONLY | O_NONBLOCK);
  const respW = fs.openSync(respPath, O_WRONLY);
  const stdio = fds === '3,4' ? ['ignore', 'ignore', 'pipe', reqR, respW] : [reqR, respW, 'pipe'];
  const child = spawn(process.execPath, [FIXTURE], {
    cwd: NODE_DIR,
    env: { ...process.env, AFTERBURN_PROTOCOL: '1', AFTERBURN_FDS: fds, AFTERBURN_WORKER_ID: '1' },
    stdio,
  });
  fs.closeSync(reqR);
  fs.closeSync(respW);
  fs.rmSync(dir, { recursive: true });
  let stderr = '';
  child.stderr.setEncoding('utf8');
  child.stderr.on('data', (text) => { stderr += text; });
  const exited = new Promise((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));

  let output = Buffer.alloc(0);
  let wake = () => {};
  const reader = new net.Socket({ fd: respR, readable: true, writable: false });
  reader.on('data', (chunk) => {
    output = Buffer.concat([output, chunk]);
    wake();
  });
  return {
    pid: child.pid,
    send: (text) => fs.writeSync(reqW, text),
    /** Resolves with the response pipe's bytes so far once they end with `tail`. */
    async until(tail) {
      while (!output.toString('latin1').endsWith(tail)) {
        await new Promise((resolve) => { wake = resolve; }); // eslint-disable-line no-await-in-loop
      }
      return output;
    },
    stderr: () => stderr,
    /** EOF on the request pipe (§9.4); resolves with the exit status. */
    async end() {
      fs.closeSync(reqW);
      const status = await exited;
      reader.destroy();
      return status;
    },
  };
}

// The processes whose parent is `pid`, with their state (Z: a zombie, not reaped).
function childrenOf(pid) {
  const out = [];
  for (const name of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = fs.readFileSync(`/proc/${name}/stat`, 'latin1');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (Number(fields[1]) === pid) out.push({ pid: Number(name), state: fields[0] });
    } catch {
      // gone meanwhile
    }
  }
  return out;
}

// Resolves once check() is true, looking again after each turn of the event loop.
async function eventually(check) {
  while (!check()) await new Promise((resolve) => setImmediate(resolve)); // eslint-disable-line no-await-in-loop
}

describe.each([['fd mode', '3,4'], ['stdio mode', '0,1']])('the fixture\'s late writers, %s', (_mode, fds) => {
  test.each(['late', 'child'])('/garbage?when=%s answers, then a stale response follows in one piece', async (when) => {
    const fixture = startFixture(fds);
    fixture.send(HANDSHAKE);
    const reply = await fixture.until('\r\n\r\n');
    fixture.send(`GET /garbage?when=${when}&ms=200 HTTP/1.1\r\nHost: fn\r\n\r\n`);
    await fixture.until('{"late":true}');
    let writer = null;
    if (when === 'child') {
      // While it sleeps: a child of the worker whose stdio is /dev/null, not the worker's logs.
      [writer] = childrenOf(fixture.pid);
      expect(writer).toBeDefined();
      for (const fd of [0, 1, 2]) expect(fs.readlinkSync(`/proc/${writer.pid}/fd/${fd}`)).toBe('/dev/null');
    }
    const output = await fixture.until(STALE);
    const { responses, rest } = readResponses(output);
    expect(responses.map((r) => [r.status, r.body.toString()])).toEqual([[200, ''], [200, '{"late":true}'], [200, '"stale"']]);
    expect(rest.length).toBe(0);
    expect(output.subarray(reply.length).toString('latin1')).toMatch(/^HTTP\/1\.1 200 OK\r\n[^]*\r\n\r\n\{"late":true\}HTTP\/1\.1 200 OK\r\nContent-Length: 7\r\n\r\n"stale"$/);
    if (writer !== null) {
      // The writer exits after its write and the worker reaps it: no zombie is left.
      await eventually(() => !childrenOf(fixture.pid).some((c) => c.pid === writer.pid));
    }
    expect(await fixture.end()).toEqual({ code: 0, signal: null });
    expect(fixture.stderr()).toBe('');
  });
});
