'use strict';

// The shared conformance vectors (conformance/vectors/*.json), read in place. Every vector
// of kind "parse" goes through the core twice — all bytes in one write, and one segment
// per write — with the fixture's echo handler; the responses are read back as the
// watchdog would and matched against the vector's expectations.

const { loadVectors, checkEcho, compareFields } = require('./support/vectors');
const { runConnection } = require('./support/core');
const { echoOf } = require('./fixture/echo');

async function echo(req, res) {
  const parts = [];
  for await (const part of req) parts.push(part);
  const body = JSON.stringify(echoOf(req, Buffer.concat(parts)));
  res.writeHead(200, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(body) });
  res.end(body);
}

function check(vector, { code, responses, rest }) {
  const problems = [];
  vector.expect.forEach((e, i) => {
    const r = responses[i];
    if (!r) {
      problems.push(`response ${i}: missing (connection stopped with status ${code})`);
      return;
    }
    if (e.reject) {
      let body = {};
      try {
        body = JSON.parse(r.body.toString('utf8'));
      } catch {
        // reported below
      }
      const type = r.headers.find(([n]) => n === 'content-type')?.[1] || '';
      const field = r.headers.find(([n]) => n === 'afterburn-error')?.[1];
      if (r.status !== e.reject.status || body.type !== e.reject.type || field !== e.reject.type ||
          !type.startsWith('application/json')) {
        problems.push(`response ${i}: got ${r.status} ${r.body}; want a ${e.reject.status} ${e.reject.type} error`);
      }
      if (e.reject.headers) problems.push(compareFields(`response ${i} header`, r.headers, e.reject.headers));
      if (code === 0) problems.push('the connection stopped with status 0 after a reject; want non-zero (§8.8)');
      return;
    }
    if (r.status !== 200) {
      problems.push(`response ${i}: got status ${r.status} ${r.body}; want 200`);
      return;
    }
    problems.push(...checkEcho(e, JSON.parse(r.body.toString('utf8'))).map((p) => `response ${i}: ${p}`));
  });
  if (responses.length > vector.expect.length || rest.length > 0) {
    problems.push(`unexpected bytes after the responses: ${JSON.stringify(rest.toString('latin1').slice(0, 200))}`);
  }
  const last = vector.expect[vector.expect.length - 1];
  if (!last.reject && code !== 0) problems.push(`the connection stopped with status ${code}; want 0 at EOF between requests`);
  return problems.filter(Boolean);
}

const vectors = loadVectors('parse');

describe.each([
  ['all segments in one write', false],
  ['one segment per write', true],
])('parse vectors, %s', (_mode, perSegment) => {
  test.each(vectors.map((v) => [v.id, v]))('%s', async (_id, vector) => {
    const result = await runConnection({ segments: vector.segments, perSegment, env: vector.env, handle: echo });
    expect(check(vector, result)).toEqual([]);
  });
});
