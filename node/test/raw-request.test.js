'use strict';

// The request as sent, in the fetch style (issue 22): request.url is what the URL parser
// makes of the target (dot segments resolved, %2e%2e too; an empty query is '' in
// url.search, which cannot tell it from none) and
// request.headers joins repeated fields and sorts them; ctx.rawTarget and ctx.rawHeaders
// keep what the client sent. Through both fetch cores.

const { runConnection } = require('./support/core');
const { Response } = require('..');

const b = (s) => Buffer.from(s, 'latin1');

describe.each([
  ['fetch core', true],
  ['public http core', 'public'],
])('%s', (_core, fetch) => {
  test.each([
    ['/a/../b', 'http://fn/b'],
    ['/a/%2e%2e/b', 'http://fn/b'],
    ['/x?', 'http://fn/x?'], // kept in the href, but new URL(request.url).search is ''
    ['/p%2Fq?a=%20&b', 'http://fn/p%2Fq?a=%20&b'],
    ['//double//slash', 'http://fn//double//slash'],
  ])('target %s: request.url is %s, ctx.rawTarget the target as sent', async (target, url) => {
    let got;
    await runConnection({
      fetch,
      segments: [b(`GET ${target} HTTP/1.1\r\nHost: fn\r\n\r\n`)],
      handle: (request, ctx) => {
        got = [request.url, ctx.rawTarget];
        return new Response('');
      },
    });
    expect(got).toEqual([url, target]);
  });

  test('ctx.rawHeaders: every field as received, in order, repeated names apart; no AfterBurn-* of §5.3', async () => {
    let got;
    await runConnection({
      fetch,
      segments: [b('GET / HTTP/1.1\r\nHost: fn\r\nX-B: 2\r\nAfterBurn-Request-Id: rid\r\nx-a: 1\r\nX-B: 1\r\n' +
        'AfterBurn-Timeout-Ms: 5000\r\nAfterBurn-Exchange: tok\r\nCookie: a=1\r\nCookie: b=2\r\n\r\n')],
      handle: (request, ctx) => {
        got = { raw: ctx.rawHeaders, joined: [...request.headers] };
        return new Response('');
      },
    });
    expect(got.raw).toEqual([['Host', 'fn'], ['X-B', '2'], ['x-a', '1'], ['X-B', '1'], ['Cookie', 'a=1'], ['Cookie', 'b=2']]);
    expect(got.joined).toEqual([['cookie', 'a=1; b=2'], ['host', 'fn'], ['x-a', '1'], ['x-b', '2, 1']]);
  });
});

test('a head that repeats a field of §5.3 (copied without them) still gives the raw fields without them', async () => {
  let raw;
  await runConnection({
    fetch: true,
    segments: [b('GET / HTTP/1.1\r\nHost: fn\r\nAfterBurn-Request-Id: a\r\nAfterBurn-Request-Id: b\r\n' +
      'AfterBurn-Timeout-Ms: 1\r\nAfterBurn-Timeout-Ms: 2\r\nX: y\r\n\r\n')],
    handle: (request, ctx) => {
      raw = ctx.rawHeaders;
      return new Response('');
    },
  });
  expect(raw).toEqual([['Host', 'fn'], ['X', 'y']]);
});
