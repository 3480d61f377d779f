'use strict';

// Plays the watchdog of PROTOCOL.md §2.5 for one worker with K lanes: named pipes (FIFOs,
// the kernel's 64 KiB pipes, as a watchdog's), lane 1 on fds 3 and 4, lanes 2 to K on
// 5, 6, ... (AFTERBURN_STREAM_FDS), the cancel pipe after them
// (AFTERBURN_STREAM_CANCEL_FD). Every wait is on the pipes' own bytes or EOF, never a sleep.

const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const net = require('node:net');
const { spawn, execFileSync } = require('node:child_process');
const { readResponses } = require('../../lib/response-reader');
const { NODE_DIR } = require('./watchdog');

const { O_RDONLY, O_WRONLY, O_NONBLOCK } = fs.constants;

const HANDSHAKE = 'OPTIONS * HTTP/1.1\r\nHost: afterburn\r\nAfterBurn-Handshake: 1\r\nContent-Length: 0\r\n\r\n';

/** A pipe as the watchdog holds it: read end for the test, write end for the worker, or the other way. */
function makePipes(count) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'afterburn-lanes-'));
  const names = Array.from({ length: count }, (_, i) => path.join(dir, `p${i}`));
  execFileSync('mkfifo', names);
  // Read ends first (a non-blocking open needs no writer), then the write ends.
  const pipes = names.map((name) => ({ r: fs.openSync(name, O_RDONLY | O_NONBLOCK) }));
  names.forEach((name, i) => { pipes[i].w = fs.openSync(name, O_WRONLY); });
  fs.rmSync(dir, { recursive: true });
  return pipes;
}

/** One lane, seen from the watchdog: send requests, read what comes back. */
class LaneEnd {
  constructor(n, reqW, respR) {
    this.n = n;
    this.output = Buffer.alloc(0);
    this.ended = false;
    this.waiters = [];
    this.writer = new net.Socket({ fd: reqW, readable: false, writable: true });
    this.writer.on('error', () => {}); // EPIPE: the worker closed the lane (§8.8); the test looks at the responses
    this.reader = new net.Socket({ fd: respR, readable: true, writable: false });
    this.reader.on('data', (chunk) => {
      this.output = Buffer.concat([this.output, chunk]);
      this._wake();
    });
    this.reader.on('end', () => {
      this.ended = true;
      this._wake();
    });
  }

  _wake() {
    const waiters = this.waiters;
    this.waiters = [];
    for (const w of waiters) w();
  }

  async _until(check) {
    while (!check()) await new Promise((resolve) => this.waiters.push(resolve)); // eslint-disable-line no-await-in-loop
  }

  /** Writes bytes to the lane's request pipe (without waiting for the worker to read them). */
  send(bytes) {
    this.writer.write(typeof bytes === 'string' ? Buffer.from(bytes, 'latin1') : bytes);
  }

  /** EOF on the request pipe (§9.4). */
  end() {
    this.writer.end();
  }

  /** Resolves with the first n complete responses (lib/response-reader.js) once they are there. */
  async responses(n) {
    let got = [];
    await this._until(() => {
      got = readResponses(this.output).responses;
      return (got.length >= n && got[n - 1].complete) || this.ended;
    });
    if (got.length < n) throw new Error(`lane ${this.n}: EOF after ${got.length} responses; want ${n}: ${JSON.stringify(this.output.toString('latin1').slice(0, 300))}`);
    return got.slice(0, n);
  }

  /** Resolves with every byte of the response pipe once the worker closed it. */
  async eof() {
    await this._until(() => this.ended);
    return this.output;
  }

  /** Stops reading the response pipe: the worker's writes to it fill the pipe and wait. */
  stopReading() {
    this.reader.pause();
  }

  resumeReading() {
    this.reader.resume();
  }
}

/**
 * Starts a worker (`node ...args`) with `lanes` lanes and a cancel pipe; with `offer`, lanes
 * 2 to K are lanes=auto's offer (AFTERBURN_STREAM_OFFER_FDS, §2.5).
 * @param {string[]} args node's arguments
 * @param {{lanes: number, offer?: boolean, env?: object}} options
 */
function startLanes(args, { lanes, offer = false, env = {} }) {
  const prefix = offer ? 'AFTERBURN_STREAM_OFFER_' : 'AFTERBURN_STREAM_';
  const requests = makePipes(lanes);
  const responses = makePipes(lanes);
  const [cancel] = makePipes(1);
  const stdio = ['ignore', 'ignore', 'pipe'];
  const streamFds = [];
  for (let i = 0; i < lanes; i++) {
    stdio.push(requests[i].r, responses[i].w);
    if (i > 0) streamFds.push(3 + 2 * i, 4 + 2 * i);
  }
  stdio.push(cancel.r);
  const child = spawn(process.execPath, args, {
    cwd: NODE_DIR,
    env: {
      ...process.env,
      AFTERBURN_PROTOCOL: '1',
      AFTERBURN_FDS: '3,4',
      AFTERBURN_WORKER_ID: '1',
      ...(lanes > 1 ? { [`${prefix}FDS`]: streamFds.join(','), [`${prefix}CANCEL_FD`]: String(3 + 2 * lanes) } : {}),
      ...env,
    },
    stdio,
  });
  // The worker's ends are the worker's alone now: EOF on a response pipe is its doing.
  for (let i = 0; i < lanes; i++) {
    fs.closeSync(requests[i].r);
    fs.closeSync(responses[i].w);
  }
  fs.closeSync(cancel.r);
  let stderr = '';
  child.stderr.setEncoding('utf8');
  child.stderr.on('data', (text) => { stderr += text; });
  // 'close': the process has exited and its stderr is read to the end.
  const closed = new Promise((resolve) => child.once('close', (code, signal) => resolve({ code, signal })));
  const ends = requests.map((req, i) => new LaneEnd(i + 1, req.w, responses[i].r));
  return {
    pid: child.pid,
    /** Lane n, from 1. */
    lane: (n) => ends[n - 1],
    lanes: ends,
    /** Writes to the cancel pipe, in one write (§2.5). */
    cancel: (text) => fs.writeSync(cancel.w, text),
    stderr: () => stderr,
    /** Resolves with {code, signal} once the worker exited and its stderr was read. */
    closed,
    /** EOF on every request pipe and the cancel pipe; resolves as closed does. */
    async endAll() {
      for (const l of ends) l.end();
      fs.closeSync(cancel.w);
      return closed;
    },
    kill() {
      child.kill('SIGKILL');
      for (const l of ends) {
        l.writer.destroy();
        l.reader.destroy();
      }
      try {
        fs.closeSync(cancel.w);
      } catch {
        // closed by endAll
      }
    },
  };
}

/** A GET request head, with the fields the watchdog adds. */
function get(target, { id, token, timeoutMs } = {}) {
  return `GET ${target} HTTP/1.1\r\nHost: fn\r\n` +
    `${id ? `AfterBurn-Request-Id: ${id}\r\n` : ''}${token ? `AfterBurn-Exchange: ${token}\r\n` : ''}` +
    `${timeoutMs !== undefined ? `AfterBurn-Timeout-Ms: ${timeoutMs}\r\n` : ''}\r\n`;
}

module.exports = { startLanes, get, HANDSHAKE };
