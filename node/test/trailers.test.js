'use strict';

// Trailers in the fetch style (PROTOCOL.md §5.4, contract A of issue 22): the request's
// trailer section on ctx once the body has been read (ctx.trailers, ctx.rawTrailers), and
// response trailers added with ctx.addTrailers on a chunked body. Through both fetch cores:
// the one on _http_common and the one on Node's public http machinery.

const { runConnection } = require('./support/core');
const { ResponseTrailers } = require('../lib/trailers');
const { Response } = require('..');

const b = (s) => Buffer.from(s, 'latin1');
const field = (r, name) => r.headers.find(([n]) => n === name)?.[1];
const CHUNKED_WITH_TRAILERS = 'POST /t HTTP/1.1\r\nHost: fn\r\nTransfer-Encoding: chunked\r\nTrailer: X-Sum\r\n\r\n' +
  '5\r\nhello\r\n6\r\n world\r\n0\r\nX-Sum: 11\r\nx-note: a\r\nX-Note: b\r\n\r\n';

describe.each([
  ['fetch core', true],
  ['public http core', 'public'],
])('%s', (_core, fetch) => {
  const run = (segments, handle, perSegment = true) => runConnection({ segments: segments.map(b), perSegment, handle, fetch });

  test('request trailers: empty before the body is read, there once it is (ctx.trailers, ctx.rawTrailers)', async () => {
    let before;
    let after;
    const { code, responses } = await run([CHUNKED_WITH_TRAILERS], async (request, ctx) => {
      before = [...ctx.trailers];
      const text = await request.text();
      after = { text, raw: ctx.rawTrailers, sum: ctx.trailers.get('x-sum'), note: ctx.trailers.get('X-Note') };
      return new Response('ok');
    });
    expect(code).toBe(0);
    expect(responses[0].status).toBe(200);
    expect(before).toEqual([]);
    expect(after).toEqual({ text: 'hello world', raw: [['X-Sum', '11'], ['x-note', 'a'], ['X-Note', 'b']], sum: '11', note: 'a, b' });
  });

  test('a request without trailers, or without a body, has none', async () => {
    const got = [];
    await run([
      'POST /a HTTP/1.1\r\nHost: fn\r\nContent-Length: 2\r\n\r\nhi',
      'GET /b HTTP/1.1\r\nHost: fn\r\n\r\n',
    ], async (request, ctx) => {
      await request.arrayBuffer();
      got.push([ctx.rawTrailers, [...ctx.trailers]]);
      return new Response('');
    });
    expect(got).toEqual([[[], []], [[], []]]);
  });

  test('response trailers on a streamed body, added at the stream\'s end (the contract\'s /trailers)', async () => {
    const { code, responses } = await run([CHUNKED_WITH_TRAILERS], async (request, ctx) => {
      const text = await request.text();
      const trailers = Object.fromEntries([...ctx.trailers]);
      const body = JSON.stringify({ body: text, trailers });
      const stream = new ReadableStream({
        pull(controller) {
          controller.enqueue(new TextEncoder().encode(body));
          ctx.addTrailers({ 'X-Fixture-Trailer': 'done' });
          controller.close();
        },
      });
      return new Response(stream, { headers: { Trailer: 'X-Fixture-Trailer' } });
    });
    expect(code).toBe(0);
    const [r] = responses;
    expect([r.status, r.chunked, r.complete, field(r, 'trailer'), field(r, 'content-length')])
      .toEqual([200, true, true, 'X-Fixture-Trailer', undefined]);
    expect(JSON.parse(r.body.toString())).toEqual({ body: 'hello world', trailers: { 'x-sum': '11', 'x-note': 'a, b' } });
    expect(r.trailers).toEqual([['x-fixture-trailer', 'done']]);
  });

  test.each([
    ['a string', () => 'abc', 'abc'],
    ['no body', () => null, ''],
    ['an empty stream', () => new ReadableStream({ start: (c) => c.close() }), ''],
    ['a stream of one chunk', () => new ReadableStream({ start: (c) => { c.enqueue(b('xyz')); c.close(); } }), 'xyz'],
  ])('trailers added before returning %s make the body chunked', async (_what, makeBody, want) => {
    const { responses } = await run(['GET / HTTP/1.1\r\nHost: fn\r\n\r\n'], (request, ctx) => {
      ctx.addTrailers([['X-A', '1'], ['X-A', '2']]);
      ctx.addTrailers(new Headers({ 'x-b': 'three' }));
      return new Response(makeBody());
    });
    const [r] = responses;
    expect([r.chunked, r.complete, r.body.toString(), field(r, 'content-length')]).toEqual([true, true, want, undefined]);
    expect(r.trailers).toEqual([['x-a', '1'], ['x-a', '2'], ['x-b', 'three']]);
  });

  test('the handler\'s own Content-Length is held to: trailers are dropped, as Node\'s res.addTrailers does', async () => {
    const { responses } = await run(['GET / HTTP/1.1\r\nHost: fn\r\n\r\n'], (request, ctx) => {
      ctx.addTrailers({ 'X-A': '1' });
      return new Response('abc', { headers: { 'Content-Length': '3' } });
    });
    expect([responses[0].chunked, responses[0].body.toString(), responses[0].trailers]).toEqual([false, 'abc', []]);
  });

  test('a trailer name that is no token fails the handler (500 handler_error); framing fields are dropped', async () => {
    const { responses } = await run([
      'GET /bad HTTP/1.1\r\nHost: fn\r\n\r\n',
      'GET /framing HTTP/1.1\r\nHost: fn\r\n\r\n',
    ], (request, ctx) => {
      if (request.url.endsWith('/bad')) ctx.addTrailers({ 'bad name': 'x' });
      else ctx.addTrailers({ 'Content-Length': '9', 'Transfer-Encoding': 'x', 'AfterBurn-Exchange': 'z', 'X-Ok': 'y' });
      return new Response('s');
    });
    expect([responses[0].status, field(responses[0], 'afterburn-error')]).toEqual([500, 'handler_error']);
    expect(responses[1].trailers).toEqual([['x-ok', 'y']]);
  });

  test('addTrailers after the response is complete throws', async () => {
    let ctx;
    await run(['GET / HTTP/1.1\r\nHost: fn\r\n\r\n'], (request, c) => {
      ctx = c;
      return new Response('');
    });
    expect(() => ctx.addTrailers({ 'X-Late': '1' })).toThrow(/after the response is complete/);
  });
});

describe('ResponseTrailers', () => {
  test.each([
    [{ a: '1', b: ['2', '3'] }, [['a', '1'], ['b', '2'], ['b', '3']]],
    [[['X', ' padded ']], [['X', 'padded']]],
    [new Map([['m', 'v']]), [['m', 'v']]],
  ])('add(%p)', (fields, want) => {
    const t = new ResponseTrailers();
    t.add(fields);
    expect(t.pairs).toEqual(want);
  });

  test.each([[null], ['a: b'], [[['a']]], [{ 'a b': 'c' }], [{ a: 'x\r\ny: z' }], [{ a: 'nul\0' }]])('refuses %p', (fields) => {
    expect(() => new ResponseTrailers().add(fields)).toThrow(TypeError);
  });
});

describe('listener style: context(req) has the same members', () => {
  const { context } = require('..');

  test('rawTarget, rawHeaders, trailers once the body is read; addTrailers is res.addTrailers', async () => {
    let got;
    const { responses } = await runConnection({
      segments: [b(CHUNKED_WITH_TRAILERS.replace('POST /t', 'POST /a/../t?'))],
      handle: async (req, res) => {
        const ctx = context(req);
        for await (const _ of req); // eslint-disable-line no-unused-vars
        got = [ctx.rawTarget, ctx.rawHeaders[0], ctx.trailers.get('x-note'), ctx.rawTrailers.length];
        res.writeHead(200, { Trailer: 'X-Done' });
        res.write('body');
        ctx.addTrailers({ 'X-Done': '1' });
        ctx.addTrailers([['X-More', '2']]);
        res.end();
      },
    });
    expect(got).toEqual(['/a/../t?', ['Host', 'fn'], 'a, b', 3]);
    expect([responses[0].chunked, responses[0].trailers]).toEqual([true, [['x-done', '1'], ['x-more', '2']]]);
  });
});
