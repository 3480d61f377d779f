'use strict';

// Runs a Connection (the whole core: FrameGuard, llhttp, response framing, errors) over
// memory: request bytes in, response bytes out, and the exit status it asks for.

const { Connection } = require('../../lib/connection');
const { limitsFromEnv } = require('../../lib/config');
const { readResponses } = require('../../lib/response-reader');

const nextMacrotask = () => new Promise((resolve) => setImmediate(resolve));

/**
 * @param {object} o
 * @param {Buffer[]} o.segments written in order
 * @param {boolean} [o.perSegment] one push per segment, each on its own turn of the event
 *   loop (incremental parsing); otherwise all bytes in one push
 * @param {boolean} [o.eof] close the request stream after the segments (default true)
 * @param {object} [o.env] the AFTERBURN_* limits
 * @param {Function} o.handle (req, res, ctx)
 * @param {(chunk: Buffer) => void} [o.write] replaces the in-memory sink's write
 */
function runConnection({ segments, perSegment = false, eof = true, env = {}, handle, write }) {
  const out = [];
  const logs = [];
  let conn;
  const done = new Promise((resolve) => {
    conn = new Connection({
      limits: limitsFromEnv(env),
      handle,
      log: (text) => logs.push(text),
      sink: {
        write: write || ((chunk) => out.push(Buffer.from(chunk))),
        end: (code) => resolve(code),
      },
    });
  });
  const feed = async () => {
    if (perSegment) {
      for (const s of segments) {
        conn.push(s);
        await nextMacrotask();
      }
    } else {
      conn.push(Buffer.concat(segments));
    }
    if (eof) conn.end();
  };
  feed();
  return done.then((code) => {
    const output = Buffer.concat(out);
    return { code, output, logs, ...readResponses(output) };
  });
}

module.exports = { runConnection, nextMacrotask };
