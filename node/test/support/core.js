'use strict';

// Runs a Connection (the whole core: FrameGuard, llhttp, response framing, errors) over
// memory: request bytes in, response bytes out, and the exit status it asks for.

const { Connection } = require('../../lib/connection');
const { FetchConnection } = require('../../lib/fetch-connection');
const { FetchListenerConnection } = require('../../lib/fetch-listener');
const { limitsFromEnv } = require('../../lib/config');
const { readResponses } = require('../../lib/response-reader');

const nextMacrotask = () => new Promise((resolve) => setImmediate(resolve));

/**
 * A copy of bytes as a plain Uint8Array (not a Buffer) inside a larger ArrayBuffer, at an
 * offset, as lib/child.js hands its reads to the core.
 */
function plainView(bytes) {
  const view = new Uint8Array(new ArrayBuffer(bytes.length + 16), 7, bytes.length);
  view.set(bytes);
  return view;
}

/**
 * @param {object} o
 * @param {Buffer[]} o.segments written in order
 * @param {boolean} [o.perSegment] one push per segment, each on its own turn of the event
 *   loop (incremental parsing); otherwise all bytes in one push
 * @param {boolean} [o.eof] close the request stream after the segments (default true)
 * @param {object} [o.env] the AFTERBURN_* limits
 * @param {Function} o.handle (req, res, ctx), or (request, ctx) with fetch
 * @param {boolean | 'public'} [o.fetch] run the fetch-style core (lib/fetch-connection.js);
 *   'public': the one on Node's public http machinery (lib/fetch-listener.js), which serve()
 *   runs where Node's internal parser is not usable
 * @param {(chunk: Buffer) => void} [o.write] replaces the in-memory sink's write
 * @param {{paused: number, resumed: number, pushed?: number}} [o.flow] counts pauseInput and
 *   resumeInput calls, and the segments pushed so far
 * @param {boolean} [o.views] push each chunk as a plain Uint8Array (not a Buffer) over a larger
 *   ArrayBuffer, at an offset, as lib/child.js does with its read buffer
 * @param {boolean} [o.latin1Sink] give the sink a writeLatin1 too, as lib/child.js does
 *
 * With perSegment, a paused core gets no more segments until it resumes, as from a pipe.
 */
function runConnection({ segments, perSegment = false, eof = true, env = {}, handle, fetch = false, write, flow, views = false, latin1Sink = false, logFormat }) {
  const out = [];
  const sink = {
    write: write || ((chunk) => out.push(Buffer.from(chunk))),
    end: null,
  };
  if (latin1Sink) {
    sink.writeLatin1 = (text) => {
      if (typeof text !== 'string' || /[^\x00-\xff]/.test(text)) throw new TypeError(`not latin1 text: ${text}`);
      out.push(Buffer.from(text, 'latin1'));
    };
  }
  const asView = views ? plainView : (chunk) => chunk;
  const logs = [];
  let conn;
  let paused = false;
  let wake = null;
  const Core = fetch === 'public' ? FetchListenerConnection : fetch ? FetchConnection : Connection;
  const done = new Promise((resolve) => {
    conn = new Core({
      limits: limitsFromEnv(env),
      handle,
      logFormat,
      log: (text) => logs.push(text),
      pauseInput: () => {
        paused = true;
        if (flow) flow.paused++;
      },
      resumeInput: () => {
        paused = false;
        if (flow) flow.resumed++;
        if (wake) wake();
      },
      sink: Object.assign(sink, { end: (code) => resolve(code) }),
    });
  });
  const feed = async () => {
    if (perSegment) {
      for (const s of segments) {
        while (paused) await new Promise((resolve) => { wake = resolve; }); // eslint-disable-line no-await-in-loop
        wake = null;
        conn.push(asView(s));
        if (flow) flow.pushed = (flow.pushed || 0) + 1;
        await nextMacrotask();
      }
    } else {
      conn.push(asView(Buffer.concat(segments)));
    }
    if (eof) conn.end();
  };
  feed();
  return done.then((code) => {
    const output = Buffer.concat(out);
    return { code, output, logs, ...readResponses(output) };
  });
}

module.exports = { runConnection, nextMacrotask, plainView };
