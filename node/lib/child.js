'use strict';

// The I/O shell around a Connection: finds the protocol descriptors, protects stdout,
// reads the request pipe into the Connection and exits when it stops (PROTOCOL.md §9.4:
// status 0 after EOF between requests; non-zero after a framing error, §8.8, or a response
// left incomplete, §8.3).

const fs = require('node:fs');
const { Connection } = require('./connection');
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

let running = false;

/** Whether serve or serveListener has been called in this process (for the launcher). */
function isRunning() {
  return running;
}

/**
 * Serves the protocol on this process's descriptors until the watchdog closes the request
 * pipe, then exits. Only one server per process.
 * @param {(req: import('http').IncomingMessage, res: import('http').ServerResponse, ctx: object) => unknown} handle
 */
function run(handle, env = process.env) {
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

  let reader;
  let writer;
  try {
    reader = openInput(input);
    writer = openOutput(output);
  } catch (err) {
    logToStderr(`afterburn: opening the protocol descriptors ${input},${output}: ${err.message}\n`);
    process.exit(2);
  }

  const conn = new Connection({
    limits,
    handle,
    log: logToStderr,
    sink: {
      write: (chunk) => writer.write(chunk),
      end: (code) => {
        writer.close();
        process.exit(code);
      },
    },
    pauseInput: () => reader.pause(),
    resumeInput: () => reader.resume(),
  });
  reader.on('data', (chunk) => conn.push(chunk));
  reader.on('end', () => conn.end());
  reader.on('error', (err) => {
    logToStderr(`afterburn: reading the request pipe: ${err.message}\n`);
    conn.end();
  });
}

module.exports = { run, isRunning, logToStderr };
