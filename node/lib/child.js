'use strict';

// The I/O shell around a Connection: finds the protocol descriptors, protects stdout,
// reads the request pipe into the Connection and exits when it stops (PROTOCOL.md §9.4:
// status 0 after EOF between requests; non-zero after a framing error, §8.8, or a response
// left incomplete, §8.3).

const fs = require('node:fs');
const { limitsFromEnv } = require('./config');
const { protocolDescriptors, openInput, openOutput } = require('./fds');

/** One write per record, so records from concurrent writers never interleave (§8.3). */
function logToStderr(text) {
  try {
    fs.writeSync(2, text);
  } catch {
    // stderr is gone; nothing left to tell
  }
}

const READ_SIZE = 64 * 1024; // as much as a net.Socket reads at once

let running = false;

/** Whether serve or serveListener has been called in this process (for the launcher). */
function isRunning() {
  return running;
}

/**
 * Serves the protocol on this process's descriptors until the watchdog closes the request
 * pipe, then exits. Only one server per process.
 * @param {Function} handle a fetch-style handler `(request, ctx)` when fetch is true
 *   (lib/fetch-connection.js), else `(req, res, ctx)` on Node's http.Server (lib/connection.js)
 * @param {{fetch?: boolean, env?: object}} [options]
 */
function run(handle, { fetch = false, env = process.env } = {}) {
  if (running) throw new Error('afterburn: serve was called twice; a worker serves one handler');
  running = true;

  let limits;
  let fds;
  try {
    limits = limitsFromEnv(env);
    fds = protocolDescriptors(env);
  } catch (err) {
    // PROTOCOL.md §2.3: a bad AFTERBURN_FDS ends the worker, non-zero, with a message.
    logToStderr(`${err.message}\n`);
    process.exit(2);
  }
  const { input, output } = fds;

  // Unhandled rejections outside a request are logged, not fatal (Node's default would
  // end the process and with it the stream).
  process.on('unhandledRejection', (reason) => {
    const detail = reason instanceof Error ? reason.stack : String(reason);
    logToStderr(`afterburn: unhandled promise rejection\n${detail}\n`);
  });

  // A fetch-style worker reads the request pipe into one buffer, used again and again, and
  // hands each read to the core in place: no allocation and no stream machinery per
  // request. A new buffer is taken only after a read the core keeps part of (a body it
  // hands the handler as it is). The listener core keeps every chunk (http.Server reads
  // them later), so it gets fresh ones from the stream.
  let conn = null;
  let readBuffer = null;
  let readMemory = null; // readBuffer's ArrayBuffer and offset, read once per buffer
  let readOffset = 0;
  const onread = fetch ? {
    buffer: () => {
      if (readBuffer === null || (conn !== null && conn.retainsInput)) {
        readBuffer = Buffer.allocUnsafe(READ_SIZE);
        readMemory = readBuffer.buffer;
        readOffset = readBuffer.byteOffset;
      }
      return readBuffer;
    },
    // Each read goes to the core as a plain Uint8Array over the bytes read (net.Socket
    // reads into the buffer last returned above): a Buffer's subarray finds its
    // constructor through Symbol.species and goes through Buffer's deprecated constructor
    // and Buffer.from, the dearest step of a small request's read.
    callback: (n) => {
      conn.push(new Uint8Array(readMemory, readOffset, n));
    },
  } : null;

  let reader;
  let inPlace;
  let writer;
  try {
    ({ reader, inPlace } = openInput(input, onread));
    writer = openOutput(output);
  } catch (err) {
    logToStderr(`afterburn: opening the protocol descriptors ${input},${output}: ${err.message}\n`);
    process.exit(2);
  }

  // Only the core in use is loaded: a fetch-style worker never loads http.Server.
  const Core = fetch ? require('./fetch-connection').FetchConnection : require('./connection').Connection;
  conn = new Core({
    limits,
    handle,
    log: logToStderr,
    sink: {
      write: (chunk) => writer.write(chunk),
      writeLatin1: (text) => writer.writeLatin1(text),
      end: (code) => {
        writer.close();
        process.exit(code);
      },
    },
    pauseInput: () => reader.pause(),
    resumeInput: () => reader.resume(),
  });
  if (!inPlace) reader.on('data', (chunk) => conn.push(chunk));
  reader.on('end', () => conn.end());
  reader.on('error', (err) => {
    logToStderr(`afterburn: reading the request pipe: ${err.message}\n`);
    conn.end();
  });
}

module.exports = { run, isRunning, logToStderr };
