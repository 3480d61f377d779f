'use strict';
// The cold-start baseline for Node: a worker that answers the AfterBurn handshake
// (PROTOCOL.md §3.2) with canned bytes and loads nothing of the library.
const fs = require('node:fs');

const [rfd, wfd] = (process.env.AFTERBURN_FDS || '0,1').split(',').map(Number);
const reply = 'HTTP/1.1 200 OK\r\nAfterBurn-Protocol: 1\r\nAfterBurn-Library: bench-nolib/0\r\nContent-Length: 0\r\n\r\n';
const buf = Buffer.alloc(4096);
let got = '';
while (!got.includes('\r\n\r\n')) {
  const n = fs.readSync(rfd, buf);
  if (n === 0) process.exit(0);
  got += buf.toString('latin1', 0, n);
}
fs.writeSync(wfd, reply);
while (fs.readSync(rfd, buf) > 0) { /* until the watchdog closes the pipe (§9.4) */ }
