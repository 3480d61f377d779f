'use strict';

// The fetch-style core (lib/fetch-connection.js) over memory: the shared vectors of
// conformance/vectors, read in place, with a fetch-style echo handler; the same answers as
// the listener core on the property corpus; and the behaviours of PROTOCOL.md §3 to §9 that
// the core makes itself (handshake, errors, framing, bodies left unread, metadata,
// response framing). Every test runs with undici's internal entry points and, where it
// matters, with its public constructors only (lib/undici.js, useInternals).

const { loadVectors, compareFields, checkParseVector, checkEcho } = require('./support/vectors');
const { echo, rawEcho, checkFetchEcho } = require('./support/fetch-echo');
const { runConnection, nextMacrotask, plainView } = require('./support/core');
const { loadUndici, useInternals } = require('../lib/undici');

const { Request, Response, Headers } = loadUndici();
const b = (s) => Buffer.from(s, 'latin1');
const get = (path, id) => `GET ${path} HTTP/1.1\r\nHost: fn\r\n${id ? `AfterBurn-Request-Id: ${id}\r\n` : ''}\r\n`;
const post = (path, body, extra = '') => `POST ${path} HTTP/1.1\r\nHost: fn\r\n${extra}Content-Length: ${body.length}\r\n\r\n${body}`;
const field = (r, name) => r.headers.find(([n]) => n === name)?.[1];
const json = (r) => JSON.parse(r.body.toString('utf8'));
const later = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const run = (o) => runConnection({ fetch: true, ...o });

afterEach(() => useInternals(true));


const vectors = loadVectors('parse');

// The last two modes are lib/child.js's: reads pushed as plain Uint8Arrays over a larger
// buffer (not Buffers), and heads with a text body written as latin1 strings.
// Each mode through both fetch cores: the one on _http_common (lib/fetch-connection.js)
// and the one on Node's public http machinery (lib/fetch-listener.js, { fetch: 'public' }),
// which serve() runs where _http_common is gone or deprecated (lib/fetch-core.js).
describe.each([
  ['all segments in one write', false, true, {}],
  ['one segment per write', true, true, {}],
  ['all segments in one write, public undici only', false, false, {}],
  ['one segment per write, as plain Uint8Array views', true, true, { views: true }],
  ['all segments in one write, as a view, to a sink that takes latin1 text', false, true, { views: true, latin1Sink: true }],
  ['public http core, all segments in one write', false, true, { fetch: 'public' }],
  ['public http core, one segment per write', true, true, { fetch: 'public' }],
  ['public http core, one segment per write, public undici only', true, false, { fetch: 'public' }],
])('parse vectors through the fetch core, %s', (_mode, perSegment, internals, io) => {
  test.each(vectors.map((v) => [v.id, v]))('%s', async (_id, vector) => {
    useInternals(internals);
    const result = await run({ segments: vector.segments, perSegment, env: vector.env, handle: echo, ...io });
    expect(checkParseVector(vector, result, checkFetchEcho)).toEqual([]);
  });
});

// ctx.rawTarget, ctx.rawHeaders and ctx.rawTrailers give the request as sent: the exact echo
// the listener gives (the target not normalised, repeated fields apart and in order, trailers).
describe.each([
  ['fetch core', true],
  ['public http core', 'public'],
])('parse vectors, the request as sent from ctx, %s', (_core, fetch) => {
  test.each(vectors.map((v) => [v.id, v]))('%s', async (_id, vector) => {
    const result = await runConnection({ segments: vector.segments, perSegment: true, env: vector.env, handle: rawEcho, fetch });
    expect(checkParseVector(vector, result, checkEcho)).toEqual([]);
  });
});

describe('the fetch core answers malformed input as the listener core does', () => {
  // The property corpus of property.test.js: every parse vector mutated, seeded.
  const SEED = 20261123;
  const CASES = 150;
  const INTERESTING = ['\r', '\n', '\r\n', ' ', '\t', ':', '\0', ';', '0', 'f', '\xff',
    'Content-Length: 5\r\n', 'Transfer-Encoding: chunked\r\n', '\r\n\r\n'].map((s) => b(s));
  const bases = vectors.map((v) => Buffer.concat(v.segments).subarray(0, 4096));
  const rng = (seed) => {
    let a = seed >>> 0;
    return () => {
      a = (a + 0x6d2b79f5) >>> 0;
      let t = a;
      t = Math.imul(t ^ (t >>> 15), t | 1);
      t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
      return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
    };
  };
  const listenerEcho = async (req, res) => {
    for await (const _ of req); // eslint-disable-line no-unused-vars
    res.end('ok');
  };
  const fetchEcho = async (request) => new Response(await request.arrayBuffer() && 'ok');
  const answers = ({ code, responses }) => ({
    failed: code !== 0,
    answers: responses.map((r) => (r.status === 200 ? 200 : [r.status, json(r).type])),
  });

  test.each(Array.from({ length: CASES }, (_, i) => [i]))('random input %i', async (i) => {
    const next = rng(SEED + i);
    const int = (n) => Math.floor(next() * n);
    let data = Buffer.from(bases[int(bases.length)]);
    for (let n = 1 + int(4); n > 0; n--) {
      const pos = int(data.length + 1);
      const what = int(3);
      if (what === 0 && data.length) data[Math.min(pos, data.length - 1)] = int(256);
      else if (what === 1) data = Buffer.concat([data.subarray(0, pos), INTERESTING[int(INTERESTING.length)], data.subarray(pos)]);
      else data = Buffer.concat([data.subarray(0, pos), data.subarray(pos + 1 + int(8))]);
    }
    const env = i % 2 ? {} : { AFTERBURN_MAX_HEADER_BYTES: '64', AFTERBURN_MAX_BODY_BYTES: '16' };
    const listener = answers(await runConnection({ segments: [data], env, handle: listenerEcho }));
    const whole = answers(await run({ segments: [data], env, handle: fetchEcho }));
    expect(whole).toEqual(listener);
    const cut = 1 + int(Math.max(1, data.length - 1));
    const split = answers(await run({ segments: [data.subarray(0, cut), data.subarray(cut)], perSegment: true, env, handle: fetchEcho }));
    expect(split).toEqual(whole);
  });
});

describe('the Request (§4.2, §5)', () => {
  test.each([['undici internals', true], ['public undici', false]])('with %s: method, URL, fields, body and context', async (_n, internals) => {
    useInternals(internals);
    let seen;
    const { code, responses } = await run({
      segments: [b('PATCH /orders?dry=1 HTTP/1.1\r\nHost: fn.example\r\nAccept: a\r\nAccept: b\r\n' +
        'AfterBurn-Request-Id: rid-r\r\nAfterBurn-Timeout-Ms: 60000\r\nContent-Length: 7\r\n\r\npayload')],
      handle: async (request, ctx) => {
        const cloned = request.clone().url; // before the body is read
        seen = {
          cloned,
          isRequest: request instanceof Request,
          hasHeaders: request.headers instanceof Headers,
          method: request.method,
          url: request.url,
          headers: [...request.headers],
          body: await request.text(),
          id: ctx.requestId,
          left: ctx.timeRemaining(),
          signal: request.signal instanceof AbortSignal && !request.signal.aborted,
          sameSignal: request.signal === request.signal,
          copy: new Request(request.url, { headers: request.headers }).headers.get('accept'),
        };
        return new Response('done');
      },
    });
    expect(code).toBe(0);
    expect(seen).toMatchObject({
      isRequest: true,
      hasHeaders: true,
      method: 'PATCH',
      url: 'http://fn.example/orders?dry=1',
      headers: [['accept', 'a, b'], ['content-length', '7'], ['host', 'fn.example']],
      body: 'payload',
      id: 'rid-r',
      signal: true,
      sameSignal: true,
      copy: 'a, b',
      cloned: 'http://fn.example/orders?dry=1',
    });
    expect(seen.left).toBeGreaterThan(50000);
    expect(responses[0].body.toString()).toBe('done');
  });

  test('a Request made from the request follows no signal and reads the body', async () => {
    let text;
    await run({
      segments: [b(post('/', 'abc'))],
      handle: async (request) => {
        text = await new Request(request).text();
        return new Response(null);
      },
    });
    expect(text).toBe('abc');
  });

  test('targets: // is a path on the Host, absolute-form keeps its own authority, a bad Host falls back', async () => {
    const urls = [];
    await run({
      segments: [b('GET //evil.example/p?q HTTP/1.1\r\nHost: fn\r\n\r\n' +
        'GET http://other.example/x HTTP/1.1\r\nHost: fn\r\n\r\n' +
        'GET /y HTTP/1.1\r\nHost: a b\r\n\r\n')],
      handle: (request) => {
        urls.push(request.url);
        return new Response('');
      },
    });
    expect(urls).toEqual(['http://fn//evil.example/p?q', 'http://other.example/x', 'http://afterburn.invalid/y']);
  });

  test('a request without a body has request.body null; GET with a body has it drained', async () => {
    const bodies = [];
    const { code, responses } = await run({
      segments: [b(get('/a') + 'GET /b HTTP/1.1\r\nHost: fn\r\nContent-Length: 3\r\n\r\nxyz' + post('/c', ''))],
      handle: (request) => {
        bodies.push(request.body);
        return new Response(new URL(request.url).pathname);
      },
    });
    expect(code).toBe(0);
    expect(bodies).toEqual([null, null, null]);
    expect(responses.map((r) => r.body.toString())).toEqual(['/a', '/b', '/c']);
  });

  test('a Content-Length body reaches the handler as the bytes read, without a copy', async () => {
    const segments = [b('POST / HTTP/1.1\r\nHost: fn\r\nContent-Length: 6\r\n\r\nabc'), b('def')];
    const seen = [];
    const { responses } = await run({
      segments,
      perSegment: true,
      handle: async (request) => {
        for await (const part of request.body) seen.push(part);
        return new Response(Buffer.concat(seen));
      },
    });
    expect(responses[0].body.toString()).toBe('abcdef');
    expect(seen.map((part, i) => part.buffer === segments[i].buffer && part.byteOffset >= segments[i].byteOffset)).toEqual([true, true]);
  });

  test('a chunked body streams in, trailers dropped, and the next request follows', async () => {
    const { responses } = await run({
      segments: [b('POST /t HTTP/1.1\r\nHost: fn\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2;x=y\r\nde\r\n0\r\nX-T: 1\r\n\r\n'), b(get('/n'))],
      perSegment: true,
      handle: async (request) => new Response(`${request.headers.get('x-t')}|${await request.text()}`),
    });
    expect(responses.map((r) => r.body.toString())).toEqual(['null|abcde', 'null|']);
  });

  test('pipelined requests are answered in order, one exchange at a time (§2.1)', async () => {
    const order = [];
    const { responses } = await run({
      segments: [b(get('/slow') + get('/fast') + post('/body', 'xyz'))],
      handle: async (request) => {
        const path = new URL(request.url).pathname;
        order.push(`start ${path}`);
        if (path === '/slow') await later(10);
        order.push(`end ${path}`);
        return new Response(path === '/body' ? await request.text() : path);
      },
    });
    expect(responses.map((r) => r.body.toString())).toEqual(['/slow', '/fast', 'xyz']);
    expect(order).toEqual(['start /slow', 'end /slow', 'start /fast', 'end /fast', 'start /body', 'end /body']);
  });
});

describe('responses (§4.4, §6.1)', () => {
  const one = async (handle, request = get('/')) => {
    const result = await run({ segments: [b(request)], handle });
    return result.responses[0];
  };

  test('a known body goes with its head in one write, fields in order, Content-Length, no Date', async () => {
    const writes = [];
    await runConnection({
      fetch: true,
      segments: [b(get('/'))],
      handle: () => new Response('hello', { status: 201, statusText: 'Made', headers: { 'x-a': '1' } }),
      write: (chunk) => writes.push(Buffer.from(chunk).toString('latin1')),
    });
    expect(writes).toEqual(['HTTP/1.1 201 Made\r\nx-a: 1\r\ncontent-type: text/plain;charset=UTF-8\r\ncontent-length: 5\r\n\r\nhello']);
  });

  test.each([['undici internals', true], ['public undici', false]])('with %s: fields, Set-Cookie and bodies', async (_n, internals) => {
    useInternals(internals);
    const r = await one(() => new Response(new Uint8Array([1, 2, 3]), { headers: [['set-cookie', 'a=1'], ['set-cookie', 'b=2'], ['x-b', 'y']] }));
    expect(r.headers.filter(([n]) => n === 'set-cookie')).toEqual([['set-cookie', 'a=1'], ['set-cookie', 'b=2']]);
    expect(field(r, 'content-length')).toBe('3');
    expect([...r.body]).toEqual([1, 2, 3]);
    const j = await one(() => Response.json({ ok: true }));
    expect(json(j)).toEqual({ ok: true });
    expect(field(j, 'content-type')).toBe('application/json');
  });

  test('the reason phrase defaults to the status text of the code', async () => {
    const r = await one(() => new Response(null, { status: 404 }));
    expect([r.status, r.statusText, field(r, 'content-length')]).toEqual([404, 'Not Found', '0']);
  });

  test('HEAD gets the Content-Length the body would have had, and no body', async () => {
    const { output } = await run({ segments: [b('HEAD / HTTP/1.1\r\nHost: fn\r\n\r\n')], handle: () => new Response('four') });
    expect(output.toString('latin1')).toBe('HTTP/1.1 200 OK\r\ncontent-type: text/plain;charset=UTF-8\r\ncontent-length: 4\r\n\r\n');
  });

  test('HEAD with a streamed body: the stream is cancelled, no body is written', async () => {
    let cancelled = false;
    const { output, code } = await run({
      segments: [b('HEAD / HTTP/1.1\r\nHost: fn\r\n\r\n' + get('/next'))],
      handle: (request) => (request.method === 'HEAD'
        ? new Response(new ReadableStream({ pull() {}, cancel() { cancelled = true; } }))
        : new Response('n')),
    });
    expect(code).toBe(0);
    expect(cancelled).toBe(true);
    expect(output.toString('latin1')).toMatch(/^HTTP\/1\.1 200 OK\r\n\r\nHTTP\/1\.1 200 OK\r\n.*content-length: 1\r\n\r\nn$/s);
  });

  test.each([204, 304])('%i has no body and no framing field of the library', async (status) => {
    const { output } = await run({ segments: [b(get('/'))], handle: () => new Response(null, { status }) });
    expect(output.toString('latin1')).toBe(`HTTP/1.1 ${status} ${status === 204 ? 'No Content' : 'Not Modified'}\r\n\r\n`);
  });

  test('a stream is sent chunked, each chunk written as the stream yields it, empty chunks skipped', async () => {
    const writes = [];
    let release;
    const gate = new Promise((resolve) => { release = resolve; });
    const done = runConnection({
      fetch: true,
      segments: [b(get('/'))],
      handle: () => new Response(new ReadableStream({
        async start(controller) {
          controller.enqueue(b('one'));
          await gate;
          controller.enqueue(new Uint8Array(0));
          controller.enqueue(b('two'));
          controller.close();
        },
      })),
      write: (chunk) => writes.push(Buffer.from(chunk).toString('latin1')),
    });
    while (writes.length < 2) await nextMacrotask(); // eslint-disable-line no-await-in-loop
    expect(writes).toEqual(['HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n', '3\r\none\r\n']);
    release();
    await done;
    expect(writes.slice(2)).toEqual(['3\r\ntwo\r\n', '0\r\n\r\n']);
  });

  test("a stream with the handler's Content-Length is sent as is, and must be that long", async () => {
    const stream = (...parts) => () => new Response(new ReadableStream({
      async start(controller) {
        for (const p of parts) {
          await later(1);
          controller.enqueue(b(p));
        }
        controller.close();
      },
    }), { headers: { 'content-length': '6' } });
    const ok = await run({ segments: [b(get('/'))], handle: stream('abc', 'def') });
    expect(ok.code).toBe(0);
    expect(ok.output.toString('latin1')).toBe('HTTP/1.1 200 OK\r\ncontent-length: 6\r\n\r\nabcdef');
    for (const parts of [['abc'], ['abc', 'defg']]) {
      const bad = await run({ segments: [b(get('/') + get('/never'))], handle: stream(...parts) }); // eslint-disable-line no-await-in-loop
      expect(bad.code).not.toBe(0);
      expect(bad.responses).toHaveLength(1);
      expect(bad.responses[0].complete).toBe(false);
    }
  });

  test("a known body that contradicts the handler's Content-Length is a handler_error", async () => {
    const logs = [];
    const { responses } = await runConnection({
      fetch: true,
      segments: [b(get('/'))],
      handle: () => new Response('abc', { headers: { 'content-length': '4' } }),
    }).then((r) => { logs.push(...r.logs); return r; });
    expect(responses[0].status).toBe(500);
    expect(logs.join('')).toContain('Content-Length 4');
  });

  test('a Transfer-Encoding of the handler is replaced by the library framing', async () => {
    const r = await one(() => new Response('x', { headers: { 'transfer-encoding': 'gzip' } }));
    expect(field(r, 'transfer-encoding')).toBeUndefined();
    expect(field(r, 'content-length')).toBe('1');
  });

  test('a response-like object that is not undici: fields checked, strings in streams taken', async () => {
    const like = (headers, body) => ({ status: 200, statusText: '', headers: new Map(headers), body });
    const bad = await run({ segments: [b(get('/'))], handle: () => like([['x', 'a\r\nb']], null) });
    expect(bad.responses[0].status).toBe(500);
    const text = await run({
      segments: [b(get('/'))],
      handle: () => like([['x-ok', '1']], new ReadableStream({ start(c) { c.enqueue('str'); c.close(); } })),
    });
    expect(text.responses[0].body.toString()).toBe('str');
    expect(field(text.responses[0], 'x-ok')).toBe('1');
  });

  test('a status outside 200 to 999 is a handler_error (§4.4: no 1xx)', async () => {
    const { responses } = await run({
      segments: [b(get('/'))],
      handle: () => ({ status: 101, statusText: '', headers: [], body: null }),
    });
    expect(responses[0].status).toBe(500);
  });
});

describe('handler errors (§8.3)', () => {
  test.each([
    ['a synchronous throw', () => { throw new Error('secret-db-password'); }],
    ['a rejected promise', async () => { throw new Error('secret-db-password'); }],
    ['a non-Response', () => ({ hello: 'world' })],
  ])('%s is answered 500 handler_error, logged in one record, and serving goes on', async (_name, fail) => {
    const { code, responses, logs } = await run({
      segments: [b(get('/fail', 'rid-1') + get('/ok', 'rid-2'))],
      handle: (request) => (request.url.endsWith('/fail') ? fail() : new Response('ok')),
    });
    expect(code).toBe(0);
    const [err, ok] = responses;
    expect(err.status).toBe(500);
    expect(field(err, 'afterburn-error')).toBe('handler_error');
    expect(field(err, 'content-type')).toBe('application/json');
    expect(json(err)).toEqual({ type: 'handler_error', message: 'the function failed while handling the request', request_id: 'rid-1' });
    expect(err.body.toString()).not.toContain('secret');
    const record = logs.find((l) => l.includes('handler failed'));
    expect(record.split('\n')[0]).toBe('[rid-1] afterburn: handler failed on GET /fail');
    expect(ok.body.toString()).toBe('ok');
  });

  test('a stream that fails after the head leaves the chunked body without its last chunk and stops non-zero', async () => {
    const { code, responses, rest } = await run({
      segments: [b(get('/mid') + get('/never'))],
      handle: () => new Response(new ReadableStream({
        start(controller) { controller.enqueue(b('partial')); },
        async pull() {
          await later(2);
          throw new Error('upstream gone');
        },
      })),
    });
    expect(code).not.toBe(0);
    expect(responses).toHaveLength(1);
    expect(responses[0]).toMatchObject({ status: 200, chunked: true, complete: false });
    expect(responses[0].body.toString()).toBe('partial');
    expect(rest.length).toBe(0);
  });
});

describe('framing errors (§8.8) and EOF (§9.4)', () => {
  test('a malformed request is answered 400 after the response owed before it, then a non-zero stop', async () => {
    const { code, responses } = await run({
      segments: [b(`${get('/first')}GET / HTTP/1.1\r\nHost: fn\r\nContent-Length: 1, 1\r\n\r\n`)],
      handle: async () => {
        await later(5);
        return new Response('first');
      },
    });
    expect(code).not.toBe(0);
    expect(responses.map((r) => r.status)).toEqual([200, 400]);
    expect(json(responses[1])).toEqual({ type: 'bad_request', message: 'the request is malformed' });
  });

  test('a body error names the request id of the request it broke', async () => {
    const { responses, code } = await run({
      segments: [b('POST / HTTP/1.1\r\nHost: fn\r\nAfterBurn-Request-Id: rid-body\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n')],
      handle: async (request) => new Response(await request.text()),
    });
    expect(code).not.toBe(0);
    expect(json(responses[0])).toMatchObject({ type: 'bad_request', request_id: 'rid-body' });
  });

  test('an error found by llhttp (not the guard) is a 400 too', async () => {
    // A field name with a character llhttp refuses; the guard leaves rule 3 to llhttp.
    const { responses, code } = await run({ segments: [b('GET / HTTP/1.1\r\nHost: fn\r\nBad{Name: 1\r\n\r\n')], handle: () => new Response('') });
    expect(code).not.toBe(0);
    expect(responses[0].status).toBe(400);
  });

  test('a framing error after the head was sent leaves that response incomplete', async () => {
    const { code, responses } = await run({
      segments: [b('POST / HTTP/1.1\r\nHost: fn\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n'), b('zz\r\n')],
      perSegment: true,
      handle: async (request) => {
        const reader = request.body.getReader();
        return new Response(new ReadableStream({
          async pull(controller) {
            const { done, value } = await reader.read();
            if (done) controller.close();
            else controller.enqueue(value);
          },
        }));
      },
    });
    expect(code).not.toBe(0);
    expect(responses).toHaveLength(1);
    expect(responses[0].complete).toBe(false);
  });

  test('an oversized Content-Length is answered 413 before the handler is called', async () => {
    let called = false;
    const { code, responses } = await run({
      segments: [b('POST / HTTP/1.1\r\nHost: fn\r\nContent-Length: 11\r\n\r\n')],
      env: { AFTERBURN_MAX_BODY_BYTES: '10' },
      eof: false,
      handle: () => { called = true; },
    });
    expect([called, code !== 0, responses[0].status, json(responses[0]).type]).toEqual([false, true, 413, 'body_too_large']);
  });

  test('a chunked body that never ends is answered 413 once it crosses the limit', async () => {
    const { responses } = await run({
      segments: [b('POST / HTTP/1.1\r\nHost: fn\r\nTransfer-Encoding: chunked\r\n\r\n'), b('4\r\nabcd\r\n'.repeat(10))],
      perSegment: true,
      eof: false,
      env: { AFTERBURN_MAX_BODY_BYTES: '16' },
      handle: async (request) => new Response(await request.text()),
    });
    expect(responses[0].status).toBe(413);
  });

  test('EOF inside a request is a 400 and a non-zero stop; EOF between requests a clean 0', async () => {
    const inside = await run({ segments: [b('GET / HTTP/1.1\r\nHost:')], handle: () => new Response('') });
    expect([inside.code !== 0, inside.responses[0].status]).toEqual([true, 400]);
    const between = await run({ segments: [b(get('/'))], handle: () => new Response('') });
    expect([between.code, between.responses.map((r) => r.status)]).toEqual([0, [200]]);
    const pending = await run({
      segments: [b(get('/'))],
      handle: async () => {
        await later(5);
        return new Response('late');
      },
    });
    expect([pending.code, pending.responses[0].body.toString()]).toEqual([0, 'late']);
  });

  test('a response pipe that is closed stops the worker non-zero', async () => {
    const { code, logs } = await runConnection({
      fetch: true,
      segments: [b(get('/'))],
      handle: () => new Response('x'),
      write: () => {
        const err = new Error('EPIPE: broken pipe, write');
        err.code = 'EPIPE';
        throw err;
      },
    });
    expect(code).not.toBe(0);
    expect(logs.join('')).toContain('broken pipe');
  });
});

describe('handshake (§3)', () => {
  const handshake = (versions) =>
    b(`OPTIONS * HTTP/1.1\r\nHost: afterburn\r\nAfterBurn-Handshake: ${versions}\r\nContent-Length: 0\r\n\r\n`);

  test('is answered by the library with the bytes of §3.2, and never reaches the handler', async () => {
    const seen = [];
    const { code, output } = await run({ segments: [handshake('1'), b(get('/after'))], handle: (r) => { seen.push(r.url); return new Response(''); } });
    expect(code).toBe(0);
    expect(seen).toEqual(['http://fn/after']);
    const { version } = require('../package.json');
    expect(output.toString('latin1')).toMatch(new RegExp(`^HTTP/1\\.1 200 OK\r\nAfterBurn-Protocol: 1\r\nAfterBurn-Library: node/${version.replace(/\./g, '\\.')}\r\n` +
      'AfterBurn-Capabilities: exchange, streams\r\nAfterBurn-Streams: 1024\r\nContent-Length: 0\r\n\r\nHTTP/1\\.1 200 OK\r\n'));
  });

  test('a version mismatch is 400 version_mismatch, then a non-zero stop', async () => {
    const { code, responses, logs } = await run({ segments: [handshake('99')], handle: () => new Response('') });
    expect(code).not.toBe(0);
    expect([responses[0].status, json(responses[0]).type, field(responses[0], 'afterburn-protocol')]).toEqual([400, 'version_mismatch', '1']);
    expect(logs.join('')).toContain('"99"');
  });
});

describe('bodies the handler leaves (§6.3) and back-pressure', () => {
  const body = 'x'.repeat(512 * 1024);
  const segments = [b(`POST /partial HTTP/1.1\r\nHost: fn\r\nContent-Length: ${body.length}\r\n\r\n`),
    ...Array.from({ length: 8 }, (_, i) => b(body.slice(i * 65536, (i + 1) * 65536))), b(get('/next'))];

  test.each([
    ['never reads', async () => {}],
    ['reads one chunk', async (request) => { await request.body.getReader().read(); }],
    ['cancels the stream', async (request) => { await request.body.cancel(); }],
    ['breaks out of for await', async (request) => { for await (const _ of request.body) break; }], // eslint-disable-line no-unused-vars
  ])('a handler that %s still gets the next request served', async (_name, reader) => {
    const flow = { paused: 0, resumed: 0 };
    const { code, responses } = await run({
      segments,
      perSegment: true,
      flow,
      handle: async (request) => {
        const path = new URL(request.url).pathname;
        if (path === '/partial') await reader(request);
        return new Response(path);
      },
    });
    expect(code).toBe(0);
    expect(responses.map((r) => r.body.toString())).toEqual(['/partial', '/next']);
    expect(flow.resumed).toBe(flow.paused); // never left paused
  });

  test('a body nobody reads yet pauses the input, and reading resumes it', async () => {
    const flow = { paused: 0, resumed: 0, pushed: 0 };
    let pushedBeforeRead = -1;
    const { responses } = await run({
      segments,
      perSegment: true,
      flow,
      handle: async (request) => {
        if (request.method !== 'POST') return new Response('next');
        await later(20); // the segments would keep coming meanwhile
        pushedBeforeRead = flow.pushed;
        return new Response(String((await request.arrayBuffer()).byteLength));
      },
    });
    // 128 KiB of body are queued for the handler; then the input waits for it.
    expect(pushedBeforeRead).toBeLessThan(5);
    expect(flow.resumed).toBe(flow.paused);
    expect(responses.map((r) => r.body.toString())).toEqual([String(body.length), 'next']);
  });

  test('a body streamed back as it arrives (the echo of a large body)', async () => {
    const { code, responses } = await run({
      segments,
      perSegment: true,
      handle: (request) => new Response(request.body, { headers: { 'content-length': request.headers.get('content-length') ?? '2' } }),
    });
    expect(code).toBe(0);
    expect(responses[0].body.toString()).toBe(body);
  });
});

describe('reading into one buffer (lib/child.js)', () => {
  const { FetchConnection } = require('../lib/fetch-connection');
  const make = (handle) => new FetchConnection({
    limits: { maxHead: 65536, maxBody: 0 }, handle, log: () => {}, sink: { write() {}, end() {} },
  });

  test('says whether the bytes of the last chunk are still referred to', async () => {
    const conn = make(async (request) => new Response(request.body === null ? 'none' : await request.text()));
    conn.push(b(get('/')));
    expect(conn.retainsInput).toBe(false); // parsed and answered from strings of their own
    conn.push(b('GET /partial HTTP/1.1\r\nHo'));
    expect(conn.retainsInput).toBe(true); // a line not complete yet
    conn.push(b('st: fn\r\n\r\n'));
    await later(1);
    conn.push(b('POST / HTTP/1.1\r\nHost: fn\r\nContent-Length: 4\r\n\r\nab'));
    expect(conn.retainsInput).toBe(true); // body bytes handed to the handler as they are
    conn.push(b('cd'));
    expect(conn.retainsInput).toBe(true);
    await later(1);
    conn.push(b('GET /a HTTP/1.1\r\nHost: fn\r\nContent-Length: 2\r\n\r\nxy'));
    expect(conn.retainsInput).toBe(false); // a body dropped (GET) is not kept
  });

  test('a request pipelined behind one still answering is kept', () => {
    const conn = make(() => new Promise(() => {})); // never answers
    conn.push(b(get('/1') + get('/2')));
    expect(conn.retainsInput).toBe(true);
  });
});

describe('metadata (§5)', () => {
  test('without an id one is made; without a deadline there is none', async () => {
    let ctx;
    await run({ segments: [b(get('/'))], handle: (_r, c) => { ctx = c; return new Response(''); } });
    expect(ctx.requestId).toMatch(/^[0-9a-f]{32}$/);
    expect([ctx.hasDeadline, ctx.timeRemaining()]).toEqual([false, Infinity]);
  });

  test('the signal aborts at the deadline with a TimeoutError, and at the end of the exchange', async () => {
    let reason;
    let ended;
    await run({
      segments: [b('GET / HTTP/1.1\r\nHost: fn\r\nAfterBurn-Timeout-Ms: 0\r\n\r\n' + get('/2'))],
      handle: async (request, ctx) => {
        if (request.url.endsWith('/2')) {
          ended = ctx.signal;
          return new Response('');
        }
        if (!ctx.signal.aborted) await new Promise((resolve) => ctx.signal.addEventListener('abort', resolve));
        reason = ctx.signal.reason;
        return new Response('');
      },
    });
    expect(reason.name).toBe('TimeoutError');
    expect(ended.aborted).toBe(true);
  });
});

// What lib/child.js does to spare a worker woken per request work it does not need: reads
// pushed as plain Uint8Arrays, heads written as latin1 text, the fields of §5.3 left out by
// index, llhttp's message-complete callback only for bodies llhttp reads itself.
describe('the shapes of the worker I/O and the fast paths of the core', () => {
  const { FetchConnection } = require('../lib/fetch-connection');
  const { readResponses } = require('../lib/response-reader');
  const { HTTPParser } = require('_http_common');
  const view = (text) => plainView(b(text));

  test('a body streamed from plain Uint8Array reads comes in Buffers', async () => {
    const kinds = [];
    const { responses } = await run({
      segments: [b('POST / HTTP/1.1\r\nHost: fn\r\nContent-Length: 6\r\n\r\nabc'), b('def'),
        b('POST / HTTP/1.1\r\nHost: fn\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nghi\r\n'), b('0\r\n\r\n')],
      perSegment: true,
      views: true,
      handle: async (request) => {
        const parts = [];
        for await (const part of request.body) {
          kinds.push(Buffer.isBuffer(part));
          parts.push(part);
        }
        return new Response(Buffer.concat(parts));
      },
    });
    expect(responses.map((r) => r.body.toString())).toEqual(['abcdef', 'ghi']);
    expect(kinds.length).toBeGreaterThanOrEqual(3);
    expect(kinds.every(Boolean)).toBe(true);
  });

  test('a whole Content-Length body pushed as a view is the handler\'s own copy', async () => {
    const conn = new FetchConnection({
      limits: { maxHead: 65536, maxBody: 0 },
      sink: { write() {}, end() {} },
      handle: async (request) => {
        const got = await request.text();
        seen.push(got);
        return new Response(got);
      },
    });
    const seen = [];
    const bytes = view(post('/', 'payload'));
    conn.push(bytes);
    expect(conn.retainsInput).toBe(false); // copied out: the read buffer is free again
    bytes.fill(0x21); // the next read overwrites it
    await later(1);
    expect(seen).toEqual(['payload']);
  });

  test('a sink that takes latin1 text gets the very bytes a Buffer-only sink gets', async () => {
    const handle = (request) => {
      const path = new URL(request.url).pathname;
      if (path === '/ascii') return new Response('Hello, world!\n', { headers: { 'x-l': 'caf\u00e9' } });
      if (path === '/utf8') return new Response('h\u00e9llo \u2713 \u{1F600}', { statusText: 'Fine \u00e9' });
      if (path === '/bytes') return new Response(new Uint8Array([0, 0xe9, 0xff]));
      if (path === '/none') return new Response(null, { status: 204, headers: { 'x-l': '\u00ff' } });
      return new Response('for HEAD');
    };
    const segments = [b(get('/ascii') + get('/utf8') + get('/bytes') + get('/none') + 'HEAD /head HTTP/1.1\r\nHost: fn\r\n\r\n' +
      'OPTIONS * HTTP/1.1\r\nHost: afterburn\r\nAfterBurn-Handshake: 1\r\nContent-Length: 0\r\n\r\n')];
    const withText = await run({ segments, handle, latin1Sink: true });
    const plain = await run({ segments, handle });
    expect(withText.code).toBe(0);
    expect(withText.output.equals(plain.output)).toBe(true);
    const { responses } = readResponses(withText.output, { bodyless: (i) => i === 4 });
    expect(responses.map((r) => r.status)).toEqual([200, 200, 200, 204, 200, 200]);
    const ascii = responses[0];
    expect([field(ascii, 'x-l'), ascii.body.toString()]).toEqual(['caf\u00e9', 'Hello, world!\n']);
    expect(withText.output.includes(Buffer.from([0x63, 0x61, 0x66, 0xe9, 0x0d]))).toBe(true); // é as one byte, 0xe9
    expect(responses[1].body.toString('utf8')).toBe('h\u00e9llo \u2713 \u{1F600}');
    expect(responses[1].statusText).toBe('Fine \u00e9');
    expect([...responses[2].body]).toEqual([0, 0xe9, 0xff]);
    expect(field(responses[3], 'x-l')).toBe('\u00ff');
    expect(field(responses[4], 'content-length')).toBe('8');
    // Which writes go as text: a head with an ASCII body, and heads without a body.
    const calls = [];
    const conn = new FetchConnection({
      limits: { maxHead: 65536, maxBody: 0 },
      handle,
      sink: { write: () => calls.push('bytes'), writeLatin1: (text) => calls.push(text.slice(text.indexOf('\r\n\r\n') + 4) || 'head'), end() {} },
    });
    conn.push(segments[0]);
    await later(5);
    expect(calls).toEqual(['Hello, world!\n', 'bytes', 'bytes', 'head', 'head', 'bytes']);
  });

  test.each([['undici internals', true], ['public undici', false]])('with %s: the fields of §5.3 are left out however often they come', async (_n, internals) => {
    useInternals(internals);
    const seen = [];
    await run({
      segments: [b('GET / HTTP/1.1\r\nX-A: 1\r\nAfterBurn-Request-Id: first\r\nHost: fn\r\nafterburn-timeout-ms: 60000\r\n' +
        'X-B: 2\r\nAFTERBURN-REQUEST-ID: second\r\nX-C: 3\r\nAfterBurn-Timeout-Ms: 1\r\nX-D: 4\r\n\r\n' +
        'GET / HTTP/1.1\r\nAfterBurn-Request-Id: only\r\nHost: fn\r\nAfterBurn-Timeout-Ms: 60000\r\nX-E: 5\r\n\r\n')],
      handle: (request, ctx) => {
        seen.push({ headers: [...request.headers], id: ctx.requestId, far: ctx.timeRemaining() > 50000 });
        return new Response('');
      },
    });
    expect(seen).toEqual([
      { headers: [['host', 'fn'], ['x-a', '1'], ['x-b', '2'], ['x-c', '3'], ['x-d', '4']], id: 'first', far: true },
      { headers: [['host', 'fn'], ['x-e', '5']], id: 'only', far: true },
    ]);
  });

  test('a Content-Length of zeros is no body; leading zeros are still a body', async () => {
    const seen = [];
    const { responses } = await run({
      segments: [b('POST /z HTTP/1.1\r\nHost: fn\r\nContent-Length: 000\r\n\r\n' +
        'POST /p HTTP/1.1\r\nHost: fn\r\nContent-Length: 003\r\n\r\nabc')],
      handle: async (request) => {
        seen.push(request.body === null);
        return new Response(await request.text());
      },
    });
    expect(seen).toEqual([true, false]);
    expect(responses.map((r) => r.body.toString())).toEqual(['', 'abc']);
  });

  test('AfterBurn-Timeout-Ms is read digit by digit: leading zeros, and values past the cap', async () => {
    const seen = [];
    await run({
      segments: [b('GET / HTTP/1.1\r\nHost: fn\r\nAfterBurn-Timeout-Ms: 00000000000000000000060000\r\n\r\n' +
        'GET / HTTP/1.1\r\nHost: fn\r\nAfterBurn-Timeout-Ms: 12345678901234567890\r\n\r\n' +
        'GET / HTTP/1.1\r\nHost: fn\r\nAfterBurn-Timeout-Ms: 9007199254740993\r\n\r\n')],
      handle: (_request, ctx) => {
        seen.push(ctx.timeRemaining());
        return new Response('');
      },
    });
    expect(seen[0]).toBeGreaterThan(59000);
    expect(seen[0]).toBeLessThanOrEqual(60000);
    for (const left of seen.slice(1)) {
      expect(left).toBeGreaterThan(9223372036854 - 60000); // capped at MAX_TIMEOUT_MS (context.js)
      expect(left).toBeLessThanOrEqual(9223372036854);
    }
  });

  test("llhttp's message-complete callback is there only while llhttp reads a chunked body", async () => {
    const bodies = [];
    const conn = new FetchConnection({
      limits: { maxHead: 65536, maxBody: 0 },
      sink: { write() {}, end() {} },
      handle: async (request) => {
        bodies.push(await request.text());
        return new Response('');
      },
    });
    const { parser } = conn;
    let calls = 0; // from llhttp
    const fromLlhttp = conn.llhttpMessageComplete;
    conn.llhttpMessageComplete = () => {
      calls++;
      fromLlhttp();
    };
    // Node's parser looks both up on every message: the parser's own, not its prototype's.
    expect(Object.prototype.hasOwnProperty.call(parser, HTTPParser.kOnMessageBegin)).toBe(true);
    expect(parser[HTTPParser.kOnMessageBegin]).toBeNull();
    expect(parser[HTTPParser.kOnMessageComplete]).toBeNull();
    conn.push(b('POST /c HTTP/1.1\r\nHost: fn\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nab\r\n'));
    expect(typeof parser[HTTPParser.kOnMessageComplete]).toBe('function');
    expect(conn.current.complete).toBe(false);
    conn.push(b('0\r\n\r\n'));
    expect(conn.current.complete).toBe(true);
    expect(parser[HTTPParser.kOnMessageComplete]).toBeNull();
    expect(calls).toBe(1);
    await later(1);
    conn.push(b(get('/g') + post('/p', 'xyz')));
    expect(parser[HTTPParser.kOnMessageComplete]).toBeNull();
    await later(1);
    expect(conn.current.complete && conn.current.finished).toBe(true);
    expect(bodies).toEqual(['ab', '', 'xyz']);
    expect(calls).toBe(1); // none for the messages whose end llhttp does not read
  });

  test('a chunked request between bodiless and Content-Length ones, all in one write, all complete in order', async () => {
    const { code, output } = await run({
      segments: [b(get('/a') + 'POST /c HTTP/1.1\r\nHost: fn\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\nX-T: 1\r\n\r\n' +
        post('/p', 'xyz') + 'HEAD /h HTTP/1.1\r\nHost: fn\r\n\r\n' + 'GET /b HTTP/1.1\r\nHost: fn\r\nContent-Length: 2\r\n\r\nzz' + get('/d'))],
      views: true,
      latin1Sink: true,
      handle: async (request) => new Response(`${new URL(request.url).pathname}:${request.body === null ? '-' : await request.text()}`),
    });
    expect(code).toBe(0);
    const { responses } = readResponses(output, { bodyless: (i) => i === 3 });
    expect(responses.map((r) => `${r.status} ${r.body.toString()}`)).toEqual(['200 /a:-', '200 /c:abc', '200 /p:xyz', '200 ', '200 /b:-', '200 /d:-']);
  });
});

// The public http core (lib/fetch-listener.js) frames a Response as the llhttp core does:
// a body there at once gets Content-Length, also from Node's global Response (whose body is
// a stream); a stream that goes on is chunked; the handler's Content-Length is held to.
describe.each([
  ['fetch core', true],
  ['public http core', 'public'],
])('response framing, %s', (_core, fetch) => {
  const answer = async (handle) => (await runConnection({ fetch, segments: [b(get('/'))], handle })).responses[0];
  const slowStream = () => new ReadableStream({
    async pull(c) {
      await later(5);
      c.enqueue(b('ab'));
      await later(5);
      c.enqueue(b('cd'));
      c.close();
    },
  });

  test.each([
    ['a string', () => new Response('four'), 'four', false],
    ['bytes from Node\'s global Response', () => new globalThis.Response(new Uint8Array([104, 105])), 'hi', false],
    ['a stream that goes on', () => new Response(slowStream()), 'abcd', true],
  ])('%s', async (_what, make, body, chunked) => {
    const r = await answer(make);
    expect([r.status, r.body.toString(), r.chunked, field(r, 'content-length')])
      .toEqual([200, body, chunked, chunked ? undefined : String(body.length)]);
  });

  test('a stream shorter than the handler\'s Content-Length leaves the response incomplete (§8.3)', async () => {
    const { code, responses } = await runConnection({
      fetch,
      segments: [b(get('/'))],
      handle: () => new Response(slowStream(), { headers: { 'content-length': '9' } }),
    });
    expect([code, responses[0].complete]).toEqual([1, false]);
  });
});
