'use strict';

// The fetch-style echo handler and its check against the vectors, shared by the fetch core's
// tests (fetch-core.test.js) and the lanes tests (lanes.test.js, through apps/lanes-app.js).

const { compareFields } = require('./vectors');
const { Response } = require('afterburn-runtime');

// The echo of conformance/README.md as far as a fetch Request shows it: repeated fields
// come joined (Fetch), there are no trailers, and the URL is parsed.
async function echo(request, ctx) {
  const body = Buffer.from(await request.arrayBuffer());
  const url = new URL(request.url);
  return Response.json({
    method: request.method,
    path: url.pathname,
    query: url.search.slice(1),
    headers: [...request.headers],
    body_b64: body.toString('base64'),
    body_len: body.length,
    request_id: ctx.requestId,
  });
}

const normalPath = (p) => new URL(`http://fn${p}`).pathname;
const normalQuery = (q) => new URL(`http://fn/?${q}`).search.slice(1);

// The exact echo of conformance/README.md, as the listener's (test/fixture/echo.js): the
// request as sent, from ctx (rawTarget, rawHeaders, rawTrailers once the body is read).
async function rawEcho(request, ctx) {
  const body = Buffer.from(await request.arrayBuffer());
  const target = ctx.rawTarget;
  const q = target.indexOf('?');
  const lower = (pairs) => pairs.map(([n, v]) => [n.toLowerCase(), v]);
  return Response.json({
    method: request.method,
    path: q < 0 ? target : target.slice(0, q),
    query: q < 0 ? '' : target.slice(q + 1),
    headers: lower(ctx.rawHeaders),
    trailers: lower(ctx.rawTrailers),
    body_b64: body.toString('base64'),
    body_len: body.length,
    request_id: ctx.requestId,
  });
}

function checkFetchEcho(expectation, got) {
  const want = expectation.echo;
  const problems = [];
  for (const key of ['method', 'body_b64', 'body_len', 'request_id']) {
    if (key in want && got[key] !== want[key]) problems.push(`${key}: got ${JSON.stringify(got[key])}; want ${JSON.stringify(want[key])}`);
  }
  if ('path' in want && got.path !== normalPath(want.path)) problems.push(`path: got ${got.path}; want ${want.path}`);
  if ('query' in want && got.query !== normalQuery(want.query)) problems.push(`query: got ${got.query}; want ${want.query}`);
  if (want.headers) {
    // Fetch joins the values of a repeated name with ", " ("; " for Cookie), in order.
    const joined = [];
    for (const name of new Set(want.headers.map(([n]) => n))) {
      const values = want.headers.filter(([n]) => n === name).map(([, v]) => v);
      joined.push([name, values.join(name === 'cookie' ? '; ' : ', ')]);
    }
    problems.push(compareFields('header', got.headers, joined));
  }
  for (const name of expectation.absent_headers || []) {
    if (got.headers.some(([n]) => n === name)) problems.push(`header ${JSON.stringify(name)} present; want absent`);
  }
  return problems.filter(Boolean);
}

module.exports = { echo, rawEcho, checkFetchEcho };
