'use strict';

// The I/O shell around the cores: finds the protocol descriptors, protects stdout, reads
// each lane's request pipe into a core of its own (one lane, or several, §2.5), reads the
// cancel pipe, and exits when the lanes stop (PROTOCOL.md §9.4: status 0 after EOF between
// requests; non-zero after a framing error, §8.8, or a response left incomplete, §8.3).

const fs = require('node:fs');
const { limitsFromEnv, streamsFromEnv, preferredLanesFromEnv, logFormatFromEnv } = require('./config');
const { protocolDescriptors, checkProtocolPipes, openInput, openOutput, openLaneOutput } = require('./fds');
const { CancelLines, InFlight } = require('./cancel');
const { DEFAULT_MAX_LANES, DEFAULT_PREFERRED_LANES } = require('./protocol');

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
 * pipes, then exits. Only one server per process.
 * @param {Function} handle a fetch-style handler `(request, ctx)` when fetch is true
 *   (lib/fetch-connection.js), else `(req, res, ctx)` on Node's http.Server (lib/connection.js)
 * @param {{fetch?: boolean, env?: object, maxLanes?: number, preferredLanes?: number}} [options]
 */
function run(handle, { fetch = false, env = process.env, maxLanes = DEFAULT_MAX_LANES,
  preferredLanes = DEFAULT_PREFERRED_LANES } = {}) {
  if (running) throw new Error('afterburn: serve was called twice; a worker serves one handler');
  running = true;

  let limits;
  let fds;
  let streams;
  let preferred;
  try {
    limits = limitsFromEnv(env);
    fds = protocolDescriptors(env);
    streams = streamsFromEnv(env);
    preferred = preferredLanesFromEnv(env) ?? preferredLanes;
    checkProtocolPipes(fds, streams);
  } catch (err) {
    // PROTOCOL.md §2.3, §2.5: a bad AFTERBURN_FDS or lane variable, or descriptors that are
    // not the protocol's pipes, end the worker, non-zero, with a message.
    logToStderr(`${err.message}\n`);
    process.exit(2);
  }

  // §2.5: lanes 1 to L = min(K, maxLanes) are served, min(K, maxLanes, preferred) of an
  // offer (lanes=auto); the library closes the others. One lane of an offer is one lane
  // exactly as without lanes: its cancel pipe is closed too (the watchdog writes none).
  const lanes = [[fds.input, fds.output], ...streams.lanes];
  const used = Math.min(lanes.length, maxLanes, streams.offered ? preferred : Infinity);
  for (const [input, output] of lanes.slice(used)) {
    closeQuietly(input);
    closeQuietly(output);
  }
  if (streams.offered && used === 1 && streams.cancel !== null) {
    closeQuietly(streams.cancel);
    streams.cancel = null;
  }

  // Unhandled rejections outside a request are logged, not fatal (Node's default would
  // end the process and with it the stream).
  process.on('unhandledRejection', (reason) => {
    const detail = reason instanceof Error ? reason.stack : String(reason);
    logToStderr(`afterburn: unhandled promise rejection\n${detail}\n`);
  });

  // Exchanges are tracked by token only where a cancel pipe can name them.
  const inFlight = streams.cancel !== null ? new InFlight() : null;
  if (inFlight !== null) readCancelPipe(streams.cancel, inFlight);
  // Only the core in use is loaded: a fetch-style worker never loads http.Server, unless
  // Node's internal parser is not usable here (lib/fetch-core.js).
  const Core = fetch ? require('./fetch-core').fetchCore() : require('./connection').Connection;
  // The fetch core reads in place into one buffer; the listener cores keep every chunk.
  const inPlace = Core.readsInPlace === true;
  const common = {
    Core, inPlace, handle, limits, maxLanes, inFlight, logFormat: logFormatFromEnv(env),
    preferredLanes: streams.offered ? preferred : null, // AfterBurn-Streams-Preferred (§2.5)
  };

  if (used === 1) {
    // One lane: today's worker, byte for byte. Writes go straight into the pipe (openOutput),
    // and the process exits as the lane ends.
    const writer = openOrExit(fds.input, fds.output, openOutput);
    serveLane(fds.input, writer, common, (code) => {
      writer.close();
      exitAfterHooks(code);
    });
    return;
  }

  // Several lanes, each its own stream with its own core (§2.5), on this one event loop.
  // Each lane's response pipe is written without ever blocking (openLaneOutput): one whose
  // reader is slow must not stall the others. A lane that ends (EOF between requests, a
  // framing error, §8.8) closes its descriptors; the process exits once every lane has,
  // with the first non-zero status of a lane that failed, else 0 (§9.4).
  let live = used;
  let status = 0;
  const closing = [];
  lanes.slice(0, used).forEach(([input, output], i) => {
    const lane = i + 1;
    const writer = openOrExit(input, output, openLaneOutput);
    // (The core calls back only from the lane's own events, once serveLane has returned.)
    const { conn, reader } = serveLane(input, writer, common, (code) => {
      reader.destroy(); // closes the request pipe
      closing.push(writer.close()); // what is queued is written first
      if (conn.refused) {
        // §3.4: a failed handshake ends the worker, not only its lane.
        Promise.all(closing).then(() => exitAfterHooks(code));
        return;
      }
      live--;
      if (code !== 0) {
        logToStderr(`afterburn: lane ${lane} stopped (status ${code})${live > 0 ? '; the other lanes go on' : ''}\n`);
        if (status === 0) status = code;
      }
      if (live === 0) Promise.all(closing).then(() => exitAfterHooks(status));
    });
    // §2.5: a lane whose response pipe the watchdog closed is over; the others go on.
    writer.onError((err) => conn._stop(1, `writing the response pipe of lane ${lane}: ${err.message}`));
  });
}

// The shutdown hooks (onShutdown), kept on the global object so that every copy of this
// library a process loads shares them: the copy that serves runs the hooks of all.
const HOOKS = Symbol.for('afterburn-runtime.shutdown-hooks');

function shutdownHooks() {
  if (!Array.isArray(globalThis[HOOKS])) globalThis[HOOKS] = [];
  return globalThis[HOOKS];
}

/** Adds a hook that runs, awaited, when the worker stops serving, before it exits. */
function onShutdown(hook) {
  if (typeof hook !== 'function') throw new TypeError('afterburn: onShutdown(hook) needs a function');
  shutdownHooks().push(hook);
}

let exiting = false;

/**
 * The lanes have stopped (PROTOCOL.md §9.4: EOF between requests, status 0; or a failure):
 * runs every shutdown hook at once and waits for them all, then exits with `code`. A hook
 * that fails is logged; the status stays. The bound is the watchdog's: it kills a worker
 * still running when its shutdown_timeout ends (§9.4, §9.7). Should the hooks leave nothing
 * for the event loop to wait on, the process ends by itself, with the same status.
 */
function exitAfterHooks(code) {
  if (exiting) return;
  exiting = true;
  process.exitCode = code;
  const hooks = shutdownHooks().splice(0);
  if (hooks.length === 0) {
    process.exit(code);
    return;
  }
  Promise.allSettled(hooks.map((hook) => Promise.resolve().then(() => hook()))).then((results) => {
    for (const r of results) {
      if (r.status === 'rejected') {
        const detail = r.reason instanceof Error ? r.reason.stack : String(r.reason);
        logToStderr(`afterburn: a shutdown hook failed\n${detail}\n`);
      }
    }
    process.exit(code);
  });
}

function openOrExit(input, output, openWriter) {
  try {
    return openWriter(output);
  } catch (err) {
    logToStderr(`afterburn: opening the protocol descriptors ${input},${output}: ${err.message}\n`);
    return process.exit(2);
  }
}

/**
 * One lane: reads its request pipe into a core that writes to `writer`; `end(code)` is
 * called once when the core stops. Returns the core and the request pipe's reader.
 */
function serveLane(input, writer, { Core, inPlace: readInPlace, handle, limits, maxLanes, preferredLanes, inFlight, logFormat }, end) {
  // A fetch-style worker reads the request pipe into one buffer, used again and again, and
  // hands each read to the core in place: no allocation and no stream machinery per
  // request. A new buffer is taken only after a read the core keeps part of (a body it
  // hands the handler as it is). The listener core keeps every chunk (http.Server reads
  // them later), so it gets fresh ones from the stream.
  let conn = null;
  let readBuffer = null;
  let readMemory = null; // readBuffer's ArrayBuffer and offset, read once per buffer
  let readOffset = 0;
  const onread = readInPlace ? {
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
  try {
    ({ reader, inPlace } = openInput(input, onread));
  } catch (err) {
    logToStderr(`afterburn: opening the protocol descriptor ${input}: ${err.message}\n`);
    process.exit(2);
  }

  const sink = {
    write: (chunk) => writer.write(chunk),
    writeLatin1: (text) => writer.writeLatin1(text),
    end,
  };
  if (writer.drained !== undefined) {
    sink.drained = writer.drained;
    sink.onDrain = writer.onDrain;
  }
  conn = new Core({
    limits,
    handle,
    log: logToStderr,
    sink,
    pauseInput: () => reader.pause(),
    resumeInput: () => reader.resume(),
    maxLanes,
    preferredLanes,
    inFlight,
    logFormat,
  });
  if (!inPlace) reader.on('data', (chunk) => conn.push(chunk));
  reader.on('end', () => conn.end());
  reader.on('error', (err) => {
    logToStderr(`afterburn: reading the request pipe: ${err.message}\n`);
    conn.end();
  });
  return { conn, reader };
}

/**
 * PROTOCOL.md §2.5: reads the cancel pipe for as long as it is open, on the event loop
 * (a non-blocking read, like the lanes'), and fires the cancellation of each exchange in
 * flight that a `cancel TOKEN` line names. EOF just ends the reading.
 */
function readCancelPipe(fd, inFlight) {
  let reader;
  try {
    ({ reader } = openInput(fd));
  } catch (err) {
    logToStderr(`afterburn: opening the cancel pipe ${fd}: ${err.message}\n`);
    process.exit(2);
  }
  const lines = new CancelLines();
  reader.on('data', (chunk) => {
    for (const token of lines.push(chunk)) inFlight.cancel(token);
  });
  reader.on('end', () => reader.destroy());
  reader.on('error', (err) => logToStderr(`afterburn: reading the cancel pipe: ${err.message}\n`));
  // It never keeps the worker alive: the lanes decide when the process ends.
  if (typeof reader.unref === 'function') reader.unref();
}

function closeQuietly(fd) {
  try {
    fs.closeSync(fd);
  } catch {
    // not open: nothing to close
  }
}

module.exports = { run, isRunning, logToStderr, onShutdown };
