'use strict';

// The shared conformance vectors (conformance/vectors/*.json), read in place. Every vector
// of kind "parse" goes through the core twice — all bytes in one write, and one segment
// per write — with the fixture's echo handler; the responses are read back as the
// watchdog would and matched against the vector's expectations.

const { loadVectors, checkEcho, checkParseVector } = require('./support/vectors');
const { runConnection } = require('./support/core');
const { echoOf } = require('./fixture/echo');

async function echo(req, res) {
  const parts = [];
  for await (const part of req) parts.push(part);
  const body = JSON.stringify(echoOf(req, Buffer.concat(parts)));
  res.writeHead(200, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(body) });
  res.end(body);
}

const vectors = loadVectors('parse');

describe.each([
  ['all segments in one write', false],
  ['one segment per write', true],
])('parse vectors, %s', (_mode, perSegment) => {
  test.each(vectors.map((v) => [v.id, v]))('%s', async (_id, vector) => {
    const result = await runConnection({ segments: vector.segments, perSegment, env: vector.env, handle: echo });
    expect(checkParseVector(vector, result, checkEcho)).toEqual([]);
  });
});
