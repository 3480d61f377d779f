'use strict';

// The protocol descriptors (PROTOCOL.md §2.2, §2.4).
//
// In fd mode the pipes are fds 3 and 4 and nothing else needs doing: fd 1 is a log pipe
// and fd 0 /dev/null. In stdio mode and under a legacy watchdog the pipes are fds 0 and
// 1, where user code prints and reads. Node has no dup or dup2, but on Linux opening
// /proc/self/fd/N opens the pipe behind N anew, which is as good as dup for a pipe:
//
//   1. open the request pipe and the response pipe again through /proc/self/fd, on new
//      close-on-exec descriptors (libuv opens everything O_CLOEXEC);
//   2. close fd 0 and open /dev/null, which takes the lowest free number, 0;
//   3. close fd 1 and open stderr's target again, which takes 1.
//
// Afterwards console.log, process.stdout and native writes to fd 1 reach stderr, and
// reads of stdin see EOF. Where /proc is missing or stderr cannot be reopened (a socket),
// the fallback is what §2.4 asks at least: process.stdout.write goes to stderr, and
// native writes to fd 1 are not protected.

const fs = require('node:fs');
const net = require('node:net');
const { fdsFromEnv } = require('./config');

const { O_RDONLY, O_WRONLY, O_APPEND, O_NONBLOCK } = fs.constants;

let protectedStdout = false;

/** Sends process.stdout's writes (and so console.log's) to stderr. */
function redirectStdoutStream() {
  if (protectedStdout) return;
  protectedStdout = true;
  const stderr = process.stderr;
  process.stdout.write = function write(chunk, encoding, cb) {
    return stderr.write(chunk, encoding, cb);
  };
}

function reopen(fd, flags) {
  return fs.openSync(`/proc/self/fd/${fd}`, flags);
}

/**
 * Moves the protocol off fds 0 and 1 (PROTOCOL.md §2.4). Returns the descriptors to use
 * for the protocol from now on.
 */
function moveOffStdio(input, output) {
  let newInput = input;
  let newOutput = output;
  try {
    // Non-blocking open: the watchdog holds the other ends, and a FIFO opened blocking
    // would wait for them.
    if (input <= 1) newInput = reopen(input, O_RDONLY | O_NONBLOCK);
    if (output <= 1) newOutput = reopen(output, O_WRONLY);
  } catch {
    redirectStdoutStream();
    return { input, output };
  }
  if (input === 0 || output === 0) {
    fs.closeSync(0);
    const nul = fs.openSync('/dev/null', 'r+');
    if (nul !== 0) fs.closeSync(nul); // something else took 0; leave it closed
  }
  if (input === 1 || output === 1) {
    let errTarget = -1;
    try {
      errTarget = reopen(2, O_WRONLY | O_APPEND);
    } catch {
      // stderr cannot be reopened: keep fd 1, protect what JavaScript writes.
    }
    if (errTarget >= 0) {
      fs.closeSync(1);
      const one = reopen(errTarget, O_WRONLY | O_APPEND);
      fs.closeSync(errTarget);
      if (one !== 1) fs.closeSync(one);
    }
    redirectStdoutStream(); // harmless when fd 1 already is stderr; needed when not
  }
  return { input: newInput, output: newOutput };
}

let protocolFds = null;

/**
 * The protocol descriptors of this process, moved off fds 0 and 1 where they were there
 * (PROTOCOL.md §2.4). The first call does the work; the launcher makes it before user
 * code loads, so import-time prints are protected too. Throws a ConfigError on a bad
 * AFTERBURN_FDS.
 */
function protocolDescriptors(env = process.env) {
  if (protocolFds === null) {
    const { input, output } = fdsFromEnv(env);
    protocolFds = input <= 1 || output <= 1 ? moveOffStdio(input, output) : { input, output };
  }
  return protocolFds;
}

/**
 * A readable stream over the request pipe. With `onread` ({buffer, callback}, as for
 * net.Socket) a pipe or socket is read into the caller's buffers and the callback gets
 * every read, without the stream's own buffering; `inPlace` says whether that is so.
 * @returns {{reader: import('stream').Readable, inPlace: boolean}}
 */
function openInput(fd, onread = null) {
  const st = fs.fstatSync(fd);
  if (st.isFIFO() || st.isSocket()) {
    const options = { fd, readable: true, writable: false };
    if (onread !== null) options.onread = onread;
    return { reader: new net.Socket(options), inPlace: onread !== null };
  }
  return { reader: fs.createReadStream(null, { fd, highWaterMark: 64 * 1024 }), inPlace: false };
}

/**
 * Synchronous writes to the response pipe: when write returns, the bytes are in the
 * pipe, so a process that exits right after a response loses nothing of it. The
 * watchdog reads the response pipe concurrently with writing the request (§6.2), so a
 * full pipe only waits for it.
 */
function openOutput(fd) {
  const pause = new Int32Array(new SharedArrayBuffer(4));
  function write(chunk) {
    let off = 0;
    while (off < chunk.length) {
      try {
        off += fs.writeSync(fd, chunk, off, chunk.length - off);
      } catch (err) {
        if (err.code !== 'EAGAIN') throw err;
        // A pipe left non-blocking by someone else: wait for the reader.
        Atomics.wait(pause, 0, 0, 1);
      }
    }
  }
  return {
    write,
    /** Writes a string of one byte per character (latin1), as write does bytes. */
    writeLatin1(text) {
      let n = 0;
      try {
        // An encoding name is parsed in C++ on every write; without one the text goes as
        // UTF-8, which for ASCII (no character taking two bytes) is the same bytes.
        n = Buffer.byteLength(text, 'utf8') === text.length ? fs.writeSync(fd, text) : fs.writeSync(fd, text, null, 'latin1');
      } catch (err) {
        if (err.code !== 'EAGAIN') throw err;
      }
      // A short write (a non-blocking pipe that filled up): the rest as bytes, whose
      // offsets are the string's, one byte per character.
      if (n < text.length) write(Buffer.from(n === 0 ? text : text.slice(n), 'latin1'));
    },
    close() {
      try {
        fs.closeSync(fd);
      } catch {
        // already closed
      }
    },
  };
}

/**
 * The response pipe of a lane when a worker serves several (PROTOCOL.md §2.5): writes that
 * never wait, so a client that does not read its response stalls its own lane and not the
 * event loop every lane shares. A pipe or socket is written through a net.Socket (libuv
 * makes the descriptor non-blocking and writes at once what the pipe takes, queueing the
 * rest); write returns false while more than a socket's high-water mark waits, and drained
 * and onDrain say when it has gone. Anything else (a file) is written as openOutput does.
 */
function openLaneOutput(fd) {
  const st = fs.fstatSync(fd);
  if (!st.isFIFO() && !st.isSocket()) {
    const sync = openOutput(fd);
    return { ...sync, drained: () => null, onDrain: (cb) => cb(), onError() {}, close: async () => sync.close() };
  }
  const socket = new net.Socket({ fd, readable: false, writable: true });
  let failure = null;
  let onError = () => {};
  socket.on('error', (err) => {
    failure = err;
    onError(err);
  });
  const closed = new Promise((resolve) => socket.once('close', resolve));
  // A promise for when what is queued has been written, or the socket is gone.
  const drainedOrClosed = () => new Promise((resolve) => {
    const done = () => {
      socket.off('drain', done);
      socket.off('close', done);
      resolve();
    };
    socket.on('drain', done);
    socket.on('close', done);
  });
  return {
    write(chunk) {
      if (failure !== null) throw failure;
      return socket.write(chunk);
    },
    writeLatin1(text) {
      if (failure !== null) throw failure;
      return socket.write(text, 'latin1');
    },
    drained: () => (socket.writableNeedDrain && !socket.destroyed ? drainedOrClosed() : null),
    onDrain(cb) {
      drainedOrClosed().then(cb);
    },
    /** fn(err) once a write failed (EPIPE: the watchdog closed its end). */
    onError(fn) {
      onError = fn;
    },
    /** Writes what is queued, then closes the descriptor; resolves when it is closed. */
    close() {
      if (!socket.destroyed) socket.end();
      return closed;
    },
  };
}

module.exports = { protocolDescriptors, openInput, openOutput, openLaneOutput };
