'use strict';

// Exchange tokens (PROTOCOL.md §4.6; rule 14 of §4.3) in both cores, over memory. First the
// vectors of conformance/vectors/exchange.json that need a fixture, read in place, with the
// few fixture routes they use written here in each style. Then every way each core has of
// answering a request: the head must carry the request's AfterBurn-Exchange exactly once,
// and a response to a request without one must carry none. (The parse vectors of that file,
// rule 14 and the field hidden from handlers, run in vectors.test.js and fetch-core.test.js.)

const express = require('express');
const { loadVectors, checkResponse } = require('./support/vectors');
const { runConnection, nextMacrotask } = require('./support/core');
const { readResponses } = require('../lib/response-reader');
const { loadUndici, useInternals } = require('../lib/undici');
const { echoOf } = require('./fixture/echo');

const { Response } = loadUndici();
const b = (s) => Buffer.from(s, 'latin1');
const later = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const HANDSHAKE = 'OPTIONS * HTTP/1.1\r\nHost: afterburn\r\nAfterBurn-Handshake: 1\r\nContent-Length: 0\r\n\r\n';
const TOKEN = 'Tk0123abcXYZ';

// The values of the AfterBurn-Exchange fields of a response head, in order.
const tokens = (r) => r.headers.filter(([n]) => n === 'afterburn-exchange').map(([, v]) => v);
const exchangeField = (token) => (token === null ? '' : `AfterBurn-Exchange: ${token}\r\n`);
const json = (r) => JSON.parse(r.body.toString('utf8'));

afterEach(() => useInternals(true));

// The methods of the requests in a byte stream of heads and Content-Length bodies (all the
// exchange vectors have), so that responses to HEAD are read without a body.
function requestMethods(bytes) {
  const methods = [];
  for (let pos = 0; pos < bytes.length;) {
    const end = bytes.indexOf('\r\n\r\n', pos, 'latin1');
    if (end < 0) break;
    const head = bytes.toString('latin1', pos, end);
    methods.push(head.slice(0, head.indexOf(' ')));
    const length = /\r\ncontent-length:[ \t]*(\d+)/i.exec(head);
    pos = end + 4 + (length ? Number(length[1]) : 0);
  }
  return methods;
}

/** Runs request bytes through a core; the responses read back, HEAD ones without a body. */
async function exchange({ fetch, handle, request, perSegment = false, env = {}, eof = true }) {
  const segments = (Array.isArray(request) ? request : [request]).map(b);
  const result = await runConnection({ segments, perSegment, fetch, handle, env, eof });
  const methods = requestMethods(Buffer.concat(segments));
  return { ...result, ...readResponses(result.output, { bodyless: (i) => methods[i] === 'HEAD' }) };
}

// The fixture routes the exchange vectors use (conformance/README.md, "The fixture
// contract"), in the listener style and in the fetch style.
function listenerFixture() {
  let requests = 0;
  const reply = (res, value) => {
    const body = JSON.stringify(value);
    res.writeHead(200, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(body) });
    res.end(body);
  };
  return async (req, res) => {
    requests++;
    const url = new URL(req.url, 'http://fn');
    const q = url.searchParams;
    switch (url.pathname) {
      case '/throw':
        throw new Error('fixture: /throw');
      case '/status':
        res.statusCode = Number(q.get('code'));
        res.end();
        return;
      case '/whoami':
        reply(res, { requests });
        return;
      case '/stream':
        res.writeHead(200);
        for (let i = 0; i < Number(q.get('n')); i++) {
          res.write(Buffer.alloc(Number(q.get('size')), String(i % 10)));
          await nextMacrotask(); // eslint-disable-line no-await-in-loop
        }
        res.end();
        return;
      default: {
        const parts = [];
        for await (const part of req) parts.push(part);
        reply(res, echoOf(req, Buffer.concat(parts)));
      }
    }
  };
}

function fetchFixture() {
  let requests = 0;
  return async (request) => {
    requests++;
    const url = new URL(request.url);
    const q = url.searchParams;
    switch (url.pathname) {
      case '/throw':
        throw new Error('fixture: /throw');
      case '/status':
        return new Response(null, { status: Number(q.get('code')) });
      case '/whoami':
        return Response.json({ requests });
      case '/stream':
        return new Response(new ReadableStream({
          async start(controller) {
            for (let i = 0; i < Number(q.get('n')); i++) {
              controller.enqueue(Buffer.alloc(Number(q.get('size')), String(i % 10)));
              await later(1); // eslint-disable-line no-await-in-loop
            }
            controller.close();
          },
        }));
      default: {
        const body = Buffer.from(await request.arrayBuffer());
        return Response.json({ path: url.pathname, body_b64: body.toString('base64'), headers: [...request.headers] });
      }
    }
  };
}

const CORES = [['listener', false, listenerFixture], ['fetch', true, fetchFixture]];
const fixtureVectors = loadVectors('fixture').filter((v) => v.id.startsWith('exchange/'));

describe.each(CORES)('the exchange vectors through the %s core', (_core, fetch, fixture) => {
  test.each(fixtureVectors.map((v) => [v.id, v]))('%s', async (_id, vector) => {
    // The suite's handshake first, unless the vector is about the handshake (its default).
    const handshake = vector.handshake !== false;
    const request = (handshake ? [HANDSHAKE] : []).concat(vector.segments.map((s) => s.toString('latin1')));
    const { code, responses, rest } = await exchange({ fetch, handle: fixture(), request, env: vector.env });
    const got = handshake ? responses.slice(1) : responses;
    expect(code).toBe(0);
    expect(rest.length).toBe(0);
    expect(got).toHaveLength(vector.expect.length);
    vector.expect.forEach((e, i) => expect({ response: i, problems: checkResponse(e.response, got[i]) }).toEqual({ response: i, problems: [] }));
  });
});

// Each case: [name, method, handler]. Every one is run for a request with a token and for
// one without, each followed by a plain GET, so a response that ends too early or too late
// shows as well.
const listenerCases = [
  ['res.end with a body', 'GET', (req, res) => res.end('hello')],
  ['writeHead with fields, then end', 'GET', (req, res) => {
    res.writeHead(201, 'Made', { 'Content-Type': 'text/plain', 'X-A': '1' });
    res.end('made');
  }],
  ['an implicit head without a body', 'GET', (req, res) => res.end()],
  ['a chunked stream, written over several turns', 'GET', async (req, res) => {
    res.writeHead(200, { 'X-S': '1' });
    res.write('one');
    await later(2);
    res.write('two');
    res.end();
  }],
  ['a head flushed before any body', 'GET', async (req, res) => {
    res.flushHeaders();
    await later(2);
    res.end('late body');
  }],
  ['HEAD', 'HEAD', (req, res) => res.end('not sent')],
  ['204', 'GET', (req, res) => {
    res.statusCode = 204;
    res.end();
  }],
  ['304', 'GET', (req, res) => {
    res.writeHead(304, { ETag: '"x"' });
    res.end();
  }],
  ['a throw: 500 handler_error', 'GET', () => { throw new Error('thrown'); }],
  ['a rejected promise after fields were set: 500 handler_error', 'GET', async (req, res) => {
    res.setHeader('X-Gone', '1');
    await later(1);
    throw new Error('rejected');
  }],
  // Express gives each response a prototype of its own (app.response): the token must not
  // depend on the class of the response.
  ['an Express route: res.json', 'GET', expressApp((req, res) => res.json({ ok: true }))],
  ['an Express route: res.sendStatus(204)', 'GET', expressApp((req, res) => res.sendStatus(204))],
  ['an Express route that throws: Express\'s own 500', 'GET', expressApp(() => { throw new Error('express'); })],
  // Node would write a 103 head of its own, without the token (and §4.4 allows no 1xx).
  ['an Express route that sends early hints', 'GET', expressApp((req, res) => {
    res.writeEarlyHints({ link: '</style.css>; rel=preload' });
    res.send('hinted');
  })],
  ['Express with no route: its own 404', 'GET', (req, res) => express()(req, res)],
];

function expressApp(route) {
  const app = express();
  app.all('/{*path}', route);
  app.use((err, req, res, next) => next(err)); // Express's final handler answers
  return (req, res) => app(req, res);
}

const stream = (...parts) => new ReadableStream({
  async start(controller) {
    for (const p of parts) {
      controller.enqueue(b(p));
      await later(1); // eslint-disable-line no-await-in-loop
    }
    controller.close();
  },
});

const fetchCases = [
  ['an ASCII text body (head and body one string)', 'GET', () => new Response('hello')],
  ['a text body beyond ASCII', 'GET', () => new Response('h\u00e9llo \u2713')],
  ['a bytes body', 'GET', () => new Response(new Uint8Array([1, 2, 3]), { headers: { 'x-b': '1' } })],
  ['Response.json', 'GET', () => Response.json({ ok: true }, { status: 201 })],
  ['a body larger than one write', 'GET', () => new Response('x'.repeat(100 * 1024))],
  ['no body', 'GET', () => new Response(null, { status: 404 })],
  ['a stream, chunked', 'GET', () => new Response(stream('one', 'two'))],
  ['a stream of one chunk, sent with Content-Length', 'GET', () => new Response(new ReadableStream({
    start(controller) {
      controller.enqueue(b('only'));
      controller.close();
    },
  }))],
  ['an empty stream', 'GET', () => new Response(new ReadableStream({ start: (controller) => controller.close() }))],
  ['a stream with the handler\'s Content-Length', 'GET', () => new Response(stream('abc', 'def'), { headers: { 'content-length': '6' } })],
  ['HEAD', 'HEAD', () => new Response('not sent')],
  ['HEAD with a stream', 'HEAD', () => new Response(stream('not sent'))],
  ['204', 'GET', () => new Response(null, { status: 204 })],
  ['304', 'GET', () => new Response(null, { status: 304, headers: { etag: '"x"' } })],
  ['a throw: 500 handler_error', 'GET', () => { throw new Error('thrown'); }],
  ['a rejected promise: 500 handler_error', 'GET', async () => { throw new Error('rejected'); }],
  ['not a Response: 500 handler_error', 'GET', () => ({ not: 'a response' })],
  ['a body that contradicts its Content-Length: 500 handler_error', 'GET', () => new Response('abc', { headers: { 'content-length': '4' } })],
  ['a stream that fails before its first chunk: 500 handler_error', 'GET', () => new Response(new ReadableStream({
    async pull() {
      await later(1);
      throw new Error('upstream gone');
    },
  }))],
  ['a response-like object that is not undici\'s', 'GET', () => ({
    status: 200, statusText: 'OK', headers: new Map([['x-like', '1']]), body: stream('like'),
  })],
];

describe.each([
  ['listener', false, listenerCases],
  ['fetch', true, fetchCases],
])('every response of the %s core carries the token of its request, and only then (§4.6)', (_core, fetch, cases) => {
  test.each(cases.flatMap(([name, method, handle]) => [
    [name, 'with a token', method, handle, TOKEN],
    [name, 'without one', method, handle, null],
  ]))('%s, %s', async (_name, _with, method, handle, token) => {
    const { code, responses, rest, logs } = await exchange({
      fetch,
      // The case for /case; for /next, a JSON answer (a Request's url is absolute).
      handle: (first, second) => (first.url.endsWith('/case') ? handle(first, second) : nextResponse(fetch, second)),
      request: `${method} /case HTTP/1.1\r\nHost: fn\r\n${exchangeField(token)}\r\nGET /next HTTP/1.1\r\nHost: fn\r\n${exchangeField('next1')}\r\n`,
    });
    expect({ code, count: responses.length, rest: rest.toString('latin1'), logs: code === 0 ? [] : logs })
      .toEqual({ code: 0, count: 2, rest: '', logs: [] });
    expect(tokens(responses[0])).toEqual(token === null ? [] : [token]);
    expect(tokens(responses[1])).toEqual(['next1']);
    expect(json(responses[1])).toEqual({ next: true });
  });
});

// The answer to the plain GET after each case: a Response, or written to the listener's res.
function nextResponse(fetch, res) {
  if (fetch) return Response.json({ next: true });
  res.setHeader('Content-Type', 'application/json');
  res.end('{"next":true}');
  return undefined;
}

describe.each([['listener', false], ['fetch', true]])('handshakes in the %s core (§3.5, §4.6)', (_core, fetch) => {
  const handle = fetch ? () => new Response('user') : (req, res) => res.end('user');

  test('the first carries no token and gets none; a repeated one gets its own back', async () => {
    const { code, responses } = await exchange({
      fetch,
      handle,
      request: `${HANDSHAKE}GET / HTTP/1.1\r\nHost: fn\r\nAfterBurn-Exchange: u1\r\n\r\n` +
        'OPTIONS * HTTP/1.1\r\nHost: afterburn\r\nAfterBurn-Handshake: 1\r\nAfterBurn-Exchange: h2\r\nContent-Length: 0\r\n\r\n',
    });
    expect(code).toBe(0);
    expect(responses.map(tokens)).toEqual([[], ['u1'], ['h2']]);
    expect(responses[2].headers.find(([n]) => n === 'afterburn-capabilities')).toEqual(['afterburn-capabilities', 'exchange, streams']);
    expect(responses[2].headers.find(([n]) => n === 'content-length')).toEqual(['content-length', '0']);
  });

  test('a repeated handshake offering no version this library speaks gets its 400 with the token', async () => {
    const { code, responses } = await exchange({
      fetch,
      handle,
      request: 'OPTIONS * HTTP/1.1\r\nHost: afterburn\r\nAfterBurn-Handshake: 99\r\nAfterBurn-Exchange: h3\r\nContent-Length: 0\r\n\r\n',
    });
    expect(code).not.toBe(0);
    expect([responses[0].status, json(responses[0]).type, tokens(responses[0])]).toEqual([400, 'version_mismatch', ['h3']]);
  });
});

// A handler that sets AfterBurn-Exchange itself, in every way each style has: the library's
// value is the only one in the head, and a request without a token gets none (§4.6).
const ownListener = [
  ['setHeader', (req, res) => {
    res.setHeader('AfterBurn-Exchange', 'evil');
    res.setHeader('X-Keep', '1');
    res.end('x');
  }],
  ['setHeader with a list', (req, res) => {
    res.setHeader('afterburn-exchange', ['evil', 'evil2']);
    res.setHeader('X-Keep', '1');
    res.end('x');
  }],
  ['appendHeader', (req, res) => {
    res.appendHeader('AFTERBURN-EXCHANGE', 'evil');
    res.appendHeader('X-Keep', '1');
    res.end('x');
  }],
  ['writeHead with an object', (req, res) => {
    res.writeHead(200, { 'AfterBurn-Exchange': 'evil', 'X-Keep': '1' });
    res.end('x');
  }],
  ['writeHead with a flat list', (req, res) => {
    res.writeHead(200, ['X-Keep', '1', 'AfterBurn-Exchange', 'evil']);
    res.end('x');
  }],
  ['writeHead with a list of pairs', (req, res) => {
    res.writeHead(200, [['AfterBurn-Exchange', 'evil'], ['X-Keep', '1']]);
    res.end('x');
  }],
  ['writeHead with an object over fields set before', (req, res) => {
    res.setHeader('X-Keep', '1');
    res.writeHead(200, { 'afterburn-Exchange': 'evil' });
    res.end('x');
  }],
  ['a chunked stream', async (req, res) => {
    res.writeHead(200, { 'AfterBurn-Exchange': 'evil', 'X-Keep': '1' });
    res.write('a');
    await later(1);
    res.end('b');
  }],
  ['Express res.set', expressApp((req, res) => res.set('AfterBurn-Exchange', 'evil').set('X-Keep', '1').send('x'))],
];

const ownFetch = [
  ['Response fields', () => new Response('x', { headers: { 'AfterBurn-Exchange': 'evil', 'X-Keep': '1' } })],
  ['a streamed Response', () => new Response(stream('a', 'b'), { headers: [['afterburn-exchange', 'evil'], ['x-keep', '1']] })],
  ['a bodiless Response', () => new Response(null, { status: 204, headers: { 'AfterBurn-Exchange': 'evil', 'X-Keep': '1' } })],
  ['a response-like object', () => ({
    status: 200, statusText: '', headers: new Map([['AfterBurn-Exchange', 'evil'], ['X-Keep', '1']]), body: null,
  })],
];

describe.each([
  ['listener', false, ownListener, [true]],
  ['fetch', true, ownFetch, [true, false]],
])('a handler of the %s core that sets AfterBurn-Exchange itself cannot override it', (_core, fetch, cases, internals) => {
  test.each(cases.flatMap(([name, handle]) => internals.flatMap((fast) => [
    [name, fast, handle, TOKEN],
    [name, fast, handle, null],
  ])))('%s (undici internals: %s), request token %s', async (_name, fast, handle, token) => {
    useInternals(fast);
    const { code, responses } = await exchange({
      fetch,
      handle,
      request: `GET / HTTP/1.1\r\nHost: fn\r\n${exchangeField(token)}\r\n`,
    });
    expect(code).toBe(0);
    expect(tokens(responses[0])).toEqual(token === null ? [] : [token]);
    expect(responses[0].headers.find(([n]) => n === 'x-keep')).toEqual(['x-keep', '1']);
  });
});

describe.each([['listener', false], ['fetch', true]])('rejections (§8.8) in the %s core', (_core, fetch) => {
  const handle = fetch
    ? async (request) => new Response(request.body === null ? 'none' : await request.text())
    : (req, res) => req.resume().on('end', () => res.end('read'));
  const limited = { AFTERBURN_MAX_BODY_BYTES: '10' };

  test.each([
    ['a bad chunk size', ['POST / HTTP/1.1\r\nHost: fn\r\nAfterBurn-Exchange: c1\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\nzz\r\n'], {}, 400],
    ['a chunked body past the limit', ['POST / HTTP/1.1\r\nHost: fn\r\nAfterBurn-Exchange: c1\r\nTransfer-Encoding: chunked\r\n\r\n', '8\r\n01234567\r\n8\r\n'], limited, 413],
    ['EOF inside a Content-Length body', ['POST / HTTP/1.1\r\nHost: fn\r\nAfterBurn-Exchange: c1\r\nContent-Length: 9\r\n\r\nabc'], {}, 400],
    ['a Content-Length past the limit', ['POST / HTTP/1.1\r\nHost: fn\r\nAfterBurn-Exchange: c1\r\nContent-Length: 11\r\n\r\n'], limited, 413],
    ['a Content-Length past the limit, the head in two reads', ['POST / HTTP/1.1\r\nHost: fn\r\nAfterBurn-Exchange: c1\r\n', 'Content-Length: 11\r\n\r\n'], limited, 413],
    ['a head without Host, read to its end', ['GET / HTTP/1.1\r\nAfterBurn-Exchange: c1\r\nX: 1\r\n', '\r\n'], {}, 400],
  ])('written after the head was read, carries its token: %s', async (_name, request, env, status) => {
    const { code, responses } = await exchange({ fetch, handle, request, env, perSegment: true, eof: status !== 413 });
    expect(code).not.toBe(0);
    expect([responses[0].status, tokens(responses[0])]).toEqual([status, ['c1']]);
  });

  test.each([
    ['a second Host', 'GET / HTTP/1.1\r\nAfterBurn-Exchange: c2\r\nHost: a\r\nHost: b\r\n\r\n'],
    ['a second token (rule 14)', 'GET / HTTP/1.1\r\nHost: fn\r\nAfterBurn-Exchange: c2\r\nAfterBurn-Exchange: c2\r\n\r\n'],
  ])('written inside the head, carries none: %s', async (_name, request) => {
    const { code, responses } = await exchange({ fetch, handle, request });
    expect(code).not.toBe(0);
    expect([responses[0].status, tokens(responses[0])]).toEqual([400, []]);
  });

  test('a rejection of a request without a token carries none, after one that had it', async () => {
    const { code, responses } = await exchange({
      fetch,
      handle,
      request: ['GET / HTTP/1.1\r\nHost: fn\r\nAfterBurn-Exchange: d1\r\n\r\n',
        'POST / HTTP/1.1\r\nHost: fn\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n'],
      perSegment: true,
    });
    expect(code).not.toBe(0);
    expect(responses.map((r) => [r.status, tokens(r)])).toEqual([[200, ['d1']], [400, []]]);
  });

  test('a rejection of a pipelined request carries its own token, not the one answered before', async () => {
    const { code, responses } = await exchange({
      fetch,
      handle,
      request: 'GET / HTTP/1.1\r\nHost: fn\r\nAfterBurn-Exchange: e1\r\n\r\n' +
        'POST / HTTP/1.1\r\nHost: fn\r\nAfterBurn-Exchange: e2\r\nContent-Length: 11\r\n\r\n',
      env: limited,
      eof: false,
    });
    expect(code).not.toBe(0);
    expect(responses.map((r) => [r.status, tokens(r)])).toEqual([[200, ['e1']], [413, ['e2']]]);
  });
});

describe.each([['listener', false], ['fetch', true]])('the request fields a handler of the %s core sees (§5.3)', (_core, fetch) => {
  test('AfterBurn-Exchange is left out with the other fields of §5.3, however often they come', async () => {
    const seen = [];
    const handle = fetch
      ? (request) => {
        seen.push([...request.headers].map(([n]) => n));
        return new Response('');
      }
      : (req, res) => {
        seen.push([Object.keys(req.headers), req.rawHeaders.filter((_, i) => i % 2 === 0).map((n) => n.toLowerCase())]);
        res.end();
      };
    const { code } = await exchange({
      fetch,
      handle,
      request: 'GET / HTTP/1.1\r\nAfterBurn-Request-Id: r1\r\nHost: fn\r\nAfterBurn-Timeout-Ms: 60000\r\nafterburn-exchange: x1\r\nX-A: 1\r\n\r\n' +
        'GET / HTTP/1.1\r\nHost: fn\r\nAfterBurn-Request-Id: r2\r\nAfterBurn-Request-Id: r3\r\nAfterBurn-Timeout-Ms: 1\r\nX-B: 1\r\nAFTERBURN-EXCHANGE: x2\r\nX-C: 1\r\n\r\n',
    });
    expect(code).toBe(0);
    const want = [['host', 'x-a'], ['host', 'x-b', 'x-c']];
    if (fetch) expect(seen).toEqual(want);
    else expect(seen).toEqual(want.map((names) => [names, names]));
  });
});

// §4.4, §4.6: the token does not cost a listener's repeated fields their values. A list
// given to writeHead alone is written as given; a field set beside it would make Node
// merge the list one value per name.
describe('a listener response with repeated fields in writeHead', () => {
  test.each([['flat list', ['Set-Cookie', 'a=1', 'Set-Cookie', 'b=2']], ['list of pairs', [['Set-Cookie', 'a=1'], ['Set-Cookie', 'b=2']]]])(
    '%s keeps every value, with and without a token', async (_name, fields) => {
      for (const token of [TOKEN, null]) {
        const { code, responses } = await exchange({
          fetch: false,
          handle: (req, res) => { res.writeHead(200, fields); res.end('x'); },
          request: `GET / HTTP/1.1\r\nHost: fn\r\n${exchangeField(token)}\r\n`,
        });
        expect(code).toBe(0);
        expect(responses[0].headers.filter(([n]) => n === 'set-cookie')).toEqual([['set-cookie', 'a=1'], ['set-cookie', 'b=2']]);
        expect(tokens(responses[0])).toEqual(token === null ? [] : [token]);
      }
    });
});
