'use strict';

// The response pipe writer of lib/fds.js: bytes and latin1 text, written whole before the
// call returns, also through a pipe left non-blocking that fills up (short writes, EAGAIN).

const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const crypto = require('node:crypto');
const { spawn, execFileSync } = require('node:child_process');
const { openOutput } = require('../lib/fds');

let dir;
beforeAll(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'afterburn-fds-'));
});
afterAll(() => {
  fs.rmSync(dir, { recursive: true, force: true });
});

test('writeLatin1 writes one byte per character, ASCII or not, as write does bytes', () => {
  const file = path.join(dir, 'out');
  const fd = fs.openSync(file, 'w');
  const out = openOutput(fd);
  out.writeLatin1('HTTP/1.1 200 OK\r\n\r\nplain ASCII;');
  out.writeLatin1('caf\u00e9 \u00ff\u0080;');
  out.write(Buffer.from([0xe9]));
  out.writeLatin1('');
  out.close();
  const got = fs.readFileSync(file);
  expect(got.equals(Buffer.concat([
    Buffer.from('HTTP/1.1 200 OK\r\n\r\nplain ASCII;'),
    Buffer.from([0x63, 0x61, 0x66, 0xe9, 0x20, 0xff, 0x80, 0x3b, 0xe9]),
  ]))).toBe(true);
});

// A reader that opens the FIFO at once but waits before it reads, so that the pipe fills
// and writes find no room or come back short.
function slowReader(fifo) {
  const code = `
    const fs = require('node:fs');
    const net = require('node:net');
    const hash = require('node:crypto').createHash('sha256');
    const fd = fs.openSync(process.argv[1], fs.constants.O_RDONLY | fs.constants.O_NONBLOCK);
    let n = 0;
    setTimeout(() => {
      new net.Socket({ fd, readable: true, writable: false })
        .on('data', (d) => { n += d.length; hash.update(d); })
        .on('end', () => process.stdout.write(JSON.stringify({ n, sha256: hash.digest('hex') })));
    }, 300);`;
  const child = spawn(process.execPath, ['-e', code, fifo], { stdio: ['ignore', 'pipe', 'inherit'] });
  let output = '';
  child.stdout.on('data', (d) => { output += d; });
  const done = new Promise((resolve) => child.on('exit', () => resolve(JSON.parse(output))));
  return done;
}

function openNonBlockingWriter(fifo) {
  const { O_WRONLY, O_NONBLOCK } = fs.constants;
  const pause = new Int32Array(new SharedArrayBuffer(4));
  for (let i = 0; i < 2000; i++) {
    try {
      return fs.openSync(fifo, O_WRONLY | O_NONBLOCK); // ENXIO until the reader has it open
    } catch (err) {
      if (err.code !== 'ENXIO') throw err;
      Atomics.wait(pause, 0, 0, 5);
    }
  }
  throw new Error('the reader never opened the FIFO');
}

test.each([
  ['ASCII', 'a'],
  ['latin1', '\u00e9'],
])('writeLatin1 of %s text through a full non-blocking pipe gets every byte there, in order', async (_kind, unit) => {
  const fifo = path.join(dir, `fifo-${unit.charCodeAt(0)}`);
  execFileSync('mkfifo', [fifo]);
  const reading = slowReader(fifo);
  const fd = openNonBlockingWriter(fifo);
  // Filled first, so that the first write of text finds no room at all (EAGAIN).
  let filled = 0;
  for (;;) {
    try {
      filled += fs.writeSync(fd, Buffer.alloc(4096, 0x2e));
    } catch (err) {
      if (err.code !== 'EAGAIN') throw err;
      break;
    }
  }
  const text = `head\r\n${unit.repeat(1 << 20)}\r\ntail`;
  const out = openOutput(fd);
  try {
    out.writeLatin1(text); // returns only when all of it is in the pipe
    out.writeLatin1(text);
  } finally {
    out.close(); // the reader ends either way
  }
  const expected = Buffer.concat([Buffer.alloc(filled, 0x2e), Buffer.from(text + text, 'latin1')]);
  expect(await reading).toEqual({ n: expected.length, sha256: crypto.createHash('sha256').update(expected).digest('hex') });
}, 30000);
