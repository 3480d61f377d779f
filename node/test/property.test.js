'use strict';

// Property tests of the core (issue 8) over a seeded random corpus: every parse vector of
// conformance/vectors, mutated (bytes flipped, inserted, deleted, duplicated, two vectors
// spliced), fed whole and in random splits. For every input:
//   - the core ends the connection without throwing, answering only 200 echoes or the
//     §8.2 parsing errors (400, 413, 431, 501), and exits non-zero after an error (§8.8);
//   - the answers do not depend on how the bytes are split into writes (PROTOCOL.md §4.3).
// The corpus is seeded: a failure names its case and reproduces exactly.

const { loadVectors } = require('./support/vectors');
const { runConnection } = require('./support/core');
const { echoOf } = require('./fixture/echo');

const SEED = 20261122;
const CASES = 300;
const PARSE_ERRORS = new Set([400, 413, 431, 501]);
const INTERESTING = ['\r', '\n', '\r\n', ' ', '\t', ':', '\0', ';', '0', 'f', '\xff',
  'Content-Length: 5\r\n', 'Transfer-Encoding: chunked\r\n', '\r\n\r\n'].map((s) => Buffer.from(s, 'latin1'));

// mulberry32: a small seeded generator, so every case is reproducible.
function rng(seed) {
  let a = seed >>> 0;
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  return { int: (n) => Math.floor(next() * n), pick: (xs) => xs[Math.floor(next() * xs.length)] };
}

const bases = loadVectors('parse').map((v) => Buffer.concat(v.segments).subarray(0, 4096));
const limits = [{ AFTERBURN_MAX_HEADER_BYTES: '64', AFTERBURN_MAX_BODY_BYTES: '16' }, {}];

function mutate(r, data) {
  let b = Buffer.from(data);
  for (let n = 1 + r.int(4); n > 0; n--) {
    const pos = r.int(b.length + 1);
    switch (r.int(5)) {
      case 0:
        if (b.length) b[Math.min(pos, b.length - 1)] = r.int(256);
        break;
      case 1:
        b = Buffer.concat([b.subarray(0, pos), r.pick(INTERESTING), b.subarray(pos)]);
        break;
      case 2:
        b = Buffer.concat([b.subarray(0, pos), b.subarray(pos + 1 + r.int(8))]);
        break;
      case 3:
        b = Buffer.concat([b.subarray(0, pos), b.subarray(pos, pos + 1 + r.int(32)), b.subarray(pos)]);
        break;
      default: {
        const other = r.pick(bases).subarray(0, 2048);
        b = Buffer.concat([b.subarray(0, pos), other.subarray(r.int(other.length + 1))]);
      }
    }
  }
  return b;
}

async function echo(req, res) {
  const parts = [];
  for await (const part of req) parts.push(part);
  const body = JSON.stringify(echoOf(req, Buffer.concat(parts)));
  res.writeHead(200, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(body) });
  res.end(body);
}

// The answers without what differs by design between runs: a generated request id.
function summary({ code, responses }) {
  return {
    failed: code !== 0,
    answers: responses.map((r) => {
      if (r.status !== 200) return [r.status, JSON.parse(r.body.toString('utf8')).type];
      const e = JSON.parse(r.body.toString('utf8'));
      delete e.request_id;
      return [200, e];
    }),
  };
}

function splits(r, data) {
  const cuts = new Set();
  for (let n = 1 + r.int(6); n > 0 && data.length > 1; n--) cuts.add(1 + r.int(data.length - 1));
  const sorted = [...cuts].sort((x, y) => x - y);
  return [0, ...sorted].map((a, i) => data.subarray(a, sorted[i] ?? data.length));
}

test.each(Array.from({ length: CASES }, (_, i) => [i]))('random input %i: same answers however it is split', async (i) => {
  const r = rng(SEED + i);
  const data = mutate(r, r.pick(bases));
  const env = r.pick(limits);
  const whole = summary(await runConnection({ segments: [data], env, handle: echo }));
  for (const [status, type] of whole.answers) {
    if (status !== 200) expect([status, PARSE_ERRORS.has(status), typeof type]).toEqual([status, true, 'string']);
  }
  if (whole.answers.some(([status]) => status !== 200)) expect(whole.failed).toBe(true);
  const split = summary(await runConnection({ segments: splits(r, data), perSegment: true, env, handle: echo }));
  expect(split).toEqual(whole);
});
