'use strict';

// Reads the shared conformance vectors in place (conformance/README.md, "Vectors"): never a
// copy. Segments are latin-1 strings or {"repeat", "times"}; a vector's env overlays the
// base environment the suite's wire layer gives every fixture.

const fs = require('node:fs');
const path = require('node:path');

const VECTORS_DIR = path.resolve(__dirname, '../../../conformance/vectors');

// conformance/README.md: the base environment of the wire layer (the watchdog's defaults).
const BASE_ENV = Object.freeze({
  AFTERBURN_PROTOCOL: '1',
  AFTERBURN_FDS: '3,4',
  AFTERBURN_WORKER_ID: '1',
  AFTERBURN_MAX_HEADER_BYTES: '32768',
  AFTERBURN_MAX_BODY_BYTES: '67108864',
});

function segmentBytes(segment) {
  const text = typeof segment === 'string' ? segment : segment.repeat.repeat(segment.times);
  for (let i = 0; i < text.length; i++) {
    if (text.charCodeAt(i) > 0xff) throw new Error(`segment character U+${text.charCodeAt(i).toString(16)} is not latin-1`);
  }
  return Buffer.from(text, 'latin1');
}

/** Every vector of the given kind, each with `segments` (Buffers) and `env` resolved. */
function loadVectors(kind) {
  const files = fs.readdirSync(VECTORS_DIR).filter((f) => f.endsWith('.json') && f !== 'schema.json').sort();
  if (files.length === 0) throw new Error(`no vector files in ${VECTORS_DIR}`);
  const out = [];
  for (const file of files) {
    const doc = JSON.parse(fs.readFileSync(path.join(VECTORS_DIR, file), 'utf8'));
    for (const v of doc.vectors) {
      if (v.kind !== kind) continue;
      out.push({ ...v, segments: v.request.map(segmentBytes), env: { ...BASE_ENV, ...(v.env || {}) } });
    }
  }
  if (out.length === 0) throw new Error(`no ${kind} vectors in ${VECTORS_DIR}`);
  return out;
}

/**
 * Field lists match per name (conformance/README.md, "Field lists"): for every name the
 * expected list mentions, the actual values of that name, in order, equal the expected
 * ones. Returns a message describing the first difference, or null.
 */
function compareFields(what, actual, expected) {
  if (expected.length === 0 && actual.length !== 0) return `${what}: got ${JSON.stringify(actual)}; want none`;
  const names = new Set(expected.map(([n]) => n));
  for (const name of names) {
    const got = actual.filter(([n]) => n === name).map(([, v]) => v);
    const want = expected.filter(([n]) => n === name).map(([, v]) => v);
    if (JSON.stringify(got) !== JSON.stringify(want)) {
      return `${what} ${JSON.stringify(name)}: got ${JSON.stringify(got)}; want ${JSON.stringify(want)}`;
    }
  }
  return null;
}

/** Checks an echo (conformance/README.md, "Echo format") against an `echo` expectation. */
function checkEcho(expectation, echo) {
  const want = expectation.echo;
  const problems = [];
  for (const field of ['method', 'path', 'query', 'body_b64', 'body_len', 'request_id']) {
    if (field in want && echo[field] !== want[field]) {
      problems.push(`${field}: got ${JSON.stringify(echo[field])}; want ${JSON.stringify(want[field])}`);
    }
  }
  if (want.headers) problems.push(compareFields('header', echo.headers, want.headers));
  if (want.trailers) problems.push(compareFields('trailer', echo.trailers, want.trailers));
  for (const name of expectation.absent_headers || []) {
    if (echo.headers.some(([n]) => n === name)) problems.push(`header ${JSON.stringify(name)} present; want absent`);
  }
  return problems.filter(Boolean);
}

/**
 * Checks a response read back (lib/response-reader.js) against a fixture vector's
 * `response` expectation (conformance/README.md, "Expectations"): status, fields present
 * and absent, exact body, JSON fields, framing. Returns the problems found.
 */
function checkResponse(want, r) {
  const problems = [];
  if ('status' in want && r.status !== want.status) problems.push(`status: got ${r.status}; want ${want.status}`);
  if (want.headers) problems.push(compareFields('header', r.headers, want.headers));
  for (const name of want.absent_headers || []) {
    if (r.headers.some(([n]) => n === name)) problems.push(`header ${JSON.stringify(name)} present; want absent`);
  }
  for (const [name, member] of want.lists || []) {
    // A set-valued field: exactly one, holding member (README "Field lists").
    const values = r.headers.filter(([n]) => n === name).map(([, v]) => v);
    if (values.length !== 1 || !values[0].split(',').map((m) => m.trim()).includes(member)) {
      problems.push(`header ${JSON.stringify(name)}: got ${JSON.stringify(values)}; want one list holding ${JSON.stringify(member)}`);
    }
  }
  if ('body_b64' in want && r.body.toString('base64') !== want.body_b64) {
    problems.push(`body: got ${JSON.stringify(r.body.toString('latin1'))}; want base64 ${want.body_b64}`);
  }
  if ('body_len' in want && r.body.length !== want.body_len) problems.push(`body length: got ${r.body.length}; want ${want.body_len}`);
  if ('chunked' in want && r.chunked !== want.chunked) problems.push(`chunked: got ${r.chunked}; want ${want.chunked}`);
  if (want.no_body && r.body.length !== 0) problems.push(`body: got ${r.body.length} bytes; want none`);
  if ('incomplete' in want && r.complete === want.incomplete) problems.push(`complete: got ${r.complete}; want ${!want.incomplete}`);
  if (want.json) {
    let got;
    try {
      got = JSON.parse(r.body.toString('utf8'));
    } catch {
      problems.push(`body: got ${JSON.stringify(r.body.toString('latin1'))}; want JSON`);
      return problems.filter(Boolean);
    }
    for (const [key, value] of Object.entries(want.json)) {
      if (JSON.stringify(got[key]) !== JSON.stringify(value)) {
        problems.push(`json ${key}: got ${JSON.stringify(got[key])}; want ${JSON.stringify(value)}`);
      }
    }
  }
  return problems.filter(Boolean);
}

/**
 * What is wrong with a connection's answers to a parse vector (an empty list when nothing
 * is): rejects must be the vector's §8.1 errors, accepted requests 200s whose echoed body
 * `checkEchoed(expectation, echoed)` finds right, and the exit status 0 only at a clean EOF.
 */
function checkParseVector(vector, { code, responses, rest }, checkEchoed) {
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
    problems.push(...checkEchoed(e, JSON.parse(r.body.toString('utf8'))).map((p) => `response ${i}: ${p}`));
  });
  if (responses.length > vector.expect.length || rest.length > 0) {
    problems.push(`unexpected bytes after the responses: ${JSON.stringify(rest.toString('latin1').slice(0, 200))}`);
  }
  const last = vector.expect[vector.expect.length - 1];
  if (!last.reject && code !== 0) problems.push(`the connection stopped with status ${code}; want 0 at EOF between requests`);
  return problems.filter(Boolean);
}

module.exports = { VECTORS_DIR, BASE_ENV, loadVectors, compareFields, checkEcho, checkResponse, checkParseVector, segmentBytes };
