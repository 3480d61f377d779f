'use strict';

// The handler-shape vectors (conformance/shapes/*.json, PROTOCOL.md §13), read directly: each
// case's request goes as bytes through the fetch core (lib/fetch-connection.js) into the
// shape's adapter, whose handler records what it was given and answers the case's result in
// its platform's own way (context.succeed, a returned object, a CloudEvent). Compared as
// conformance/shapes/README.md says: the event and response headers as subsets ("$any",
// "$absent"), the body exactly; an error case gets its §8.1 body, logged, the worker kept.

const fs = require('node:fs');
const path = require('node:path');
const { CloudEvent } = require('cloudevents');
const { runConnection } = require('./support/core');
const { openfaas, lambda, cloudevents } = require('..');

const SHAPES = path.resolve(__dirname, '../../conformance/shapes');
const load = (name) => JSON.parse(fs.readFileSync(path.join(SHAPES, `${name}.json`), 'utf8'));

/** The request bytes the watchdog writes for a case's request (§4.2, §5.1, §5.2). */
function requestBytes(req) {
  const body = req.body_b64 !== undefined ? Buffer.from(req.body_b64, 'base64') : Buffer.from(req.body || '');
  let head = `${req.method} ${req.target} HTTP/1.1\r\n`;
  if (!req.headers.some(([n]) => n === 'host')) head += 'host: fn\r\n';
  for (const [name, value] of req.headers) head += `${name}: ${value}\r\n`;
  head += `AfterBurn-Request-Id: ${req.request_id}\r\n`;
  if (req.timeout_ms !== undefined) head += `AfterBurn-Timeout-Ms: ${req.timeout_ms}\r\n`;
  head += `Content-Length: ${body.length}\r\n\r\n`;
  return Buffer.concat([Buffer.from(head, 'utf8'), body]);
}

/** README: want is a subset of got; "$any" present, "$absent" missing (or null); arrays exact. */
function mismatches(got, want, at = '') {
  if (want === '$any') return got === undefined || got === null ? [`${at}: missing; want any value`] : [];
  if (want === '$absent') return got === undefined || got === null ? [] : [`${at}: ${JSON.stringify(got)}; want it absent`];
  if (want !== null && typeof want === 'object' && !Array.isArray(want)) {
    if (got === null || typeof got !== 'object' || Array.isArray(got)) return [`${at}: ${JSON.stringify(got)}; want an object`];
    return Object.keys(want).flatMap((k) => mismatches(got[k], want[k], `${at}.${k}`));
  }
  return JSON.stringify(got) === JSON.stringify(want) ? [] : [`${at}: ${JSON.stringify(got)}; want ${JSON.stringify(want)}`];
}

/** Response headers: each wanted [name, value] there, a name's values in the wanted order. */
function headerMismatches(got, want) {
  const out = [];
  const names = [...new Set(want.map(([n]) => n.toLowerCase()))];
  for (const name of names) {
    const g = got.filter(([n]) => n === name).map(([, v]) => v);
    const w = want.filter(([n]) => n.toLowerCase() === name).map(([, v]) => v);
    let i = 0;
    for (const v of g) if (i < w.length && v === w[i]) i++;
    if (i < w.length) out.push(`header ${name}: ${JSON.stringify(g)}; want ${JSON.stringify(w)}`);
  }
  return out;
}

/**
 * Runs a case: the request, then the same request again on the same connection (an error
 * case must leave the worker serving). Returns the first response, what the handler saw and
 * the connection's logs.
 */
async function run(c, makeHandler) {
  const seen = [];
  const handle = makeHandler(seen);
  const bytes = requestBytes(c.request);
  const { code, responses, logs } = await runConnection({ segments: [bytes, bytes], fetch: true, handle });
  const res = responses[0];
  const detail = `case ${c.id}: ${c.description}\nrequest: ${JSON.stringify(c.request)}\nlogs:\n${logs.join('')}`;
  expect({ code, responses: responses.length, detail }).toEqual({ code: 0, responses: 2, detail });
  return { res, seen: seen[0], logs, detail };
}

function check(c, { res, seen, logs, detail }, seenAs) {
  const problems = [];
  if (c.event !== undefined) {
    if (seen === undefined) problems.push('the handler was not called');
    else problems.push(...mismatches(seenAs(seen.event), c.event, 'event'));
  }
  if (c.context !== undefined && seen !== undefined) {
    const { awsRequestId, remaining } = seen.context;
    if (awsRequestId !== c.context.awsRequestId) problems.push(`awsRequestId ${awsRequestId}; want ${c.context.awsRequestId}`);
    if (!(remaining >= c.context.remaining_min_ms && remaining <= c.context.remaining_max_ms)) {
      problems.push(`getRemainingTimeInMillis() ${remaining}; want ${c.context.remaining_min_ms} to ${c.context.remaining_max_ms}`);
    }
  }
  if (c.response !== undefined) {
    if (res.status !== c.response.status) problems.push(`status ${res.status}; want ${c.response.status}`);
    problems.push(...headerMismatches(res.headers, c.response.headers));
    const want = c.response.body_b64 !== undefined ? Buffer.from(c.response.body_b64, 'base64') : Buffer.from(c.response.body);
    if (!res.body.equals(want)) problems.push(`body ${JSON.stringify(res.body.toString())}; want ${JSON.stringify(want.toString())}`);
  }
  if (c.error !== undefined) {
    const status = { handler_error: 500, bad_request: 400 }[c.error];
    const type = res.headers.find(([n]) => n === 'afterburn-error')?.[1];
    let body = {};
    try {
      body = JSON.parse(res.body.toString());
    } catch {
      problems.push(`body ${JSON.stringify(res.body.toString())}; want the §8.1 JSON body`);
    }
    if (res.status !== status || type !== c.error || body.type !== c.error || body.request_id !== c.request.request_id) {
      problems.push(`got ${res.status} AfterBurn-Error ${type} ${res.body}; want ${status} ${c.error} with request_id ${c.request.request_id}`);
    }
    if (c.error === 'handler_error' && !logs.join('').includes(c.request.request_id)) {
      problems.push('the handler error was not logged with the request id');
    }
  }
  expect({ problems, detail }).toEqual({ problems: [], detail });
}

// ---- openfaas-http: the Node templates' (event, context) ------------------------------------

// README: OpenFaaS's event is each language's own; the library's test builds `seen` from it.
// Node's req.headers join a repeated name's values with ", ": split again here.
function openfaasSeen(event) {
  const list = (v) => (Array.isArray(v) ? v : String(v).split(', '));
  const body = Buffer.isBuffer(event.body) ? { body_b64: event.body.toString('base64') }
    : { body: typeof event.body === 'string' ? event.body : JSON.stringify(event.body) };
  return {
    method: event.method,
    path: event.path,
    query: Object.fromEntries(Object.entries(event.query).map(([k, v]) => [k, list(v)])),
    headers: Object.fromEntries(Object.entries(event.headers).map(([k, v]) => [k, list(v)])),
    ...body,
  };
}

describe('openfaas-http vectors', () => {
  const { cases } = load('openfaas-http');
  test.each(cases.map((c) => [c.id, c]))('%s', async (_id, c) => {
    const out = await run(c, (seen) => openfaas(async (event, context) => {
      seen.push({ event });
      const r = c.result;
      if (r === undefined || r === null) return undefined;
      if (r.statusCode !== undefined) context.status(r.statusCode);
      if (r.headers !== undefined) context.headers(r.headers);
      return context.succeed(r.body);
    }));
    check(c, out, openfaasSeen);
  });
});

// ---- lambda-http: payload 2.0 ---------------------------------------------------------------

describe('lambda-http vectors', () => {
  const { cases } = load('lambda-http');
  test.each(cases.map((c) => [c.id, c]))('%s', async (_id, c) => {
    const out = await run(c, (seen) => lambda(async (event, context) => {
      seen.push({ event, context: { awsRequestId: context.awsRequestId, remaining: context.getRemainingTimeInMillis() } });
      return c.result;
    }));
    check(c, out, (event) => JSON.parse(JSON.stringify(event)));
  });
});

// ---- cloudevents: Knative's handle(context, event) ------------------------------------------

describe('cloudevents vectors', () => {
  const { cases } = load('cloudevents');
  test.each(cases.map((c) => [c.id, c]))('%s', async (_id, c) => {
    const out = await run(c, (seen) => cloudevents(async (context, event) => {
      seen.push({ event });
      const r = c.result;
      if (r === undefined || r === null) return undefined;
      if (r.event !== undefined) return new CloudEvent(r.event);
      return { statusCode: r.response.status, headers: Object.fromEntries(r.response.headers), body: r.response.body };
    }));
    // The attributes as the handler reads them: the SDK's toJSON() rewrites time as
    // toISOString() does, which is not what the request said.
    check(c, out, (event) => JSON.parse(JSON.stringify({ ...event })));
  });
});

module.exports = { requestBytes };
