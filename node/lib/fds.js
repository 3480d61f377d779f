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
const { fdsFromEnv, ConfigError } = require('./config');

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
 * (PROTOCOL.md §2.4), and whether they were on stdio. The first call does the work; the
 * launcher makes it before user code loads, so import-time prints are protected too.
 * Throws a ConfigError on a bad AFTERBURN_FDS.
 * @returns {{input: number, output: number, stdio: boolean}}
 */
function protocolDescriptors(env = process.env) {
  if (protocolFds === null) {
    const { input, output } = fdsFromEnv(env);
    protocolFds = input <= 1 || output <= 1 ? { ...moveOffStdio(input, output), stdio: true } : { input, output, stdio: false };
  }
  return protocolFds;
}

// What runs a worker so that it keeps the watchdog's descriptors: node itself, or the
// package's bin run directly (its #! line execs node), never through npx or npm exec.
const RUN_INSTEAD = '  afterburn-watchdog -- node node_modules/afterburn-runtime/bin/afterburn.js app.js\n' +
  '  afterburn-watchdog -- node_modules/.bin/afterburn app.js\n' +
  '  afterburn-watchdog -- node app.js                      (an app that calls serve() itself)';

/**
 * In fd mode (PROTOCOL.md §2.2) the watchdog starts the worker with the protocol pipes on
 * the descriptors AFTERBURN_FDS names (3 and 4), the lanes' and the cancel pipe after them
 * (§2.5). A wrapper between the two (npx, npm exec, a script that closes descriptors) may
 * not keep them: the numbers are then free, or taken by something of Node's own (its epoll
 * instance, an eventfd), and the first read fails with EINVAL, or worse, works on the wrong
 * thing. Checked once at start: each must be a pipe (a FIFO, or a socket) open the right
 * way round, or the worker ends at once with a message that says what to run instead.
 * Stdio mode (0 and 1) is not checked: those descriptors are always open, and a legacy
 * watchdog may use anything there.
 * @param {{input: number, output: number, stdio?: boolean}} fds protocolDescriptors()'s
 * @param {{lanes?: Array<[number, number]>, cancel?: number | null}} [streams] §2.5's
 * @throws {import('./config').ConfigError}
 */
function checkProtocolPipes({ input, output, stdio = false }, { lanes = [], cancel = null } = {}) {
  if (stdio || input <= 2 || output <= 2) return;
  const wanted = [[input, 'read', 'the request pipe'], [output, 'write', 'the response pipe']];
  lanes.forEach(([i, o], n) => wanted.push([i, 'read', `lane ${n + 2}'s request pipe`], [o, 'write', `lane ${n + 2}'s response pipe`]));
  if (cancel !== null) wanted.push([cancel, 'read', 'the cancel pipe']);
  for (const [fd, way, what] of wanted) {
    const problem = pipeProblem(fd, way);
    if (problem !== null) {
      throw new ConfigError(`fd ${fd} should be ${what} but ${problem}.\n` +
        `The watchdog passes the protocol pipes as descriptors ${input} and ${output} (AFTERBURN_FDS=${input},${output}); ` +
        'something between it and this process did not keep them open: npx and npm exec, for one, pass ' +
        'on only stdin, stdout and stderr. Start node itself under the watchdog, for example:\n' + RUN_INSTEAD);
    }
  }
}

// Why fd is not a pipe open for `way` ('read' or 'write'), or null when it is.
function pipeProblem(fd, way) {
  let st;
  try {
    st = fs.fstatSync(fd);
  } catch (err) {
    return err.code === 'EBADF' ? 'it is not open' : `fstat fails (${err.code})`;
  }
  if (!st.isFIFO() && !st.isSocket()) return `it is ${describeFd(fd, st)}, not a pipe`;
  const mode = accessMode(fd);
  if (mode === null) return null; // no /proc: the type is all that can be told
  if ((way === 'read' && mode === O_WRONLY) || (way === 'write' && mode === O_RDONLY)) {
    return `it is the ${way === 'read' ? 'write' : 'read'} end of a pipe`;
  }
  return null;
}

function describeFd(fd, st) {
  let target = '';
  try {
    target = fs.readlinkSync(`/proc/self/fd/${fd}`);
  } catch {
    // no /proc
  }
  const kind = st.isFile() ? 'a file' : st.isCharacterDevice() ? 'a character device' : st.isDirectory() ? 'a directory' : 'another kind of descriptor';
  return target ? `${kind} (${target})` : kind;
}

// The O_ACCMODE bits of fd's open flags (Linux: /proc/self/fdinfo), or null where unknown.
function accessMode(fd) {
  try {
    const m = /^flags:\s*([0-7]+)$/m.exec(fs.readFileSync(`/proc/self/fdinfo/${fd}`, 'latin1'));
    return m ? parseInt(m[1], 8) & 3 : null;
  } catch {
    return null;
  }
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

module.exports = { protocolDescriptors, checkProtocolPipes, openInput, openOutput, openLaneOutput };
