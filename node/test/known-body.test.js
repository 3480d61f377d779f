'use strict';

// Bodies known at once (lib/known-body.js): the package's Response keeps a string or bytes
// body without making its stream, and a request body that arrived whole with its head is
// read without one. Each test holds them to what undici's own classes do, side by side, and
// checks that the shortcut was taken where it is meant to be.

const http = require('node:http');
const undici = require('undici');
const { runConnection } = require('./support/core');
const { loadUndici, useInternals } = require('../lib/undici');
const { InHandBody } = require('../lib/fetch');
const { KnownBody } = require('../lib/known-body');
const { FetchConnection } = require('../lib/fetch-connection');
const runtime = require('..');

const { Response, Request } = runtime;
const { getResponseState, getRequestState } = loadUndici().internals;
const b = (s) => Buffer.from(s, 'latin1');
const post = (path, body, extra = '') =>
  Buffer.concat([b(`POST ${path} HTTP/1.1\r\nHost: fn\r\n${extra}Content-Length: ${Buffer.byteLength(body)}\r\n\r\n`), Buffer.from(body)]);
const get = (path) => b(`GET ${path} HTTP/1.1\r\nHost: fn\r\n\r\n`);
const run = (o) => runConnection({ ...o, fetch: true });

afterEach(() => useInternals(true));

// What a call does: its value, or the class and message of what it threw.
function outcome(fn) {
  try {
    return { value: fn() };
  } catch (err) {
    return { threw: err.constructor.name, message: err.message };
  }
}

function settle(promise) {
  return promise.then((value) => ({ value }), (err) => ({ rejected: err.constructor.name, message: err.message }));
}

// What a client can see of a Response: status, fields, body, the state of its body.
async function observe(response) {
  const before = { used: response.bodyUsed, isStream: response.body instanceof ReadableStream };
  const text = await settle(response.text());
  return {
    status: response.status,
    statusText: response.statusText,
    headers: [...response.headers],
    before,
    text,
    after: response.bodyUsed,
    again: await settle(response.text()),
  };
}

describe('the package Response', () => {
  test('is a subclass of undici Response, named Response, with its static methods', () => {
    expect(Object.getPrototypeOf(Response)).toBe(undici.Response);
    expect(new Response('x')).toBeInstanceOf(undici.Response);
    expect(Response.name).toBe('Response');
    expect(Object.prototype.toString.call(new Response('x'))).toBe('[object Response]');
    expect(Response.redirect('http://fn/x', 301).headers.get('location')).toBe('http://fn/x');
    expect(Response.error().type).toBe('error');
  });

  const bodies = [
    ['a string', () => 'hello'],
    ['an empty string', () => ''],
    ['a string with a lone surrogate', () => 'a\uD800b'],
    ['a multi-byte string', () => 'héllo ✓'],
    ['a Uint8Array', () => new Uint8Array([104, 105])],
    ['a Buffer view into a larger buffer', () => Buffer.from('xxhiyy').subarray(2, 4)],
    ['an ArrayBuffer', () => new Uint8Array([104, 105]).buffer],
    ['a DataView', () => new DataView(new Uint8Array([0, 104, 105]).buffer, 1)],
    ['a Float32Array', () => new Float32Array([1.5])],
    ['URLSearchParams', () => new URLSearchParams({ q: 'a b' })],
    ['a Blob', () => new Blob(['blob'], { type: 'text/x-blob' })],
    ['a ReadableStream', () => new ReadableStream({ start(c) { c.enqueue(new Uint8Array([115])); c.close(); } })],
    ['an async iterable', () => (async function* gen() { yield new Uint8Array([97]); })()],
    ['a number', () => 42],
    ['null', () => null],
    ['undefined', () => undefined],
  ];
  const inits = [
    ['no init', () => undefined],
    ['status, statusText and fields', () => ({ status: 201, statusText: 'Made', headers: [['x-a', '1'], ['x-a', '2']] })],
    ['its own Content-Type', () => ({ headers: new undici.Headers({ 'content-type': 'a/b' }) })],
  ];

  test.each(bodies.flatMap(([name, body]) => inits.map(([iname, init]) => [name, iname, body, init])))(
    '%s, %s: what undici makes', async (_n, _i, body, init) => {
      expect(await observe(new Response(body(), init()))).toEqual(await observe(new undici.Response(body(), init())));
    });

  test('a FormData body is undici multipart', async () => {
    const form = new undici.FormData();
    form.append('a', '1');
    const r = new Response(form);
    expect(r.headers.get('content-type')).toMatch(/^multipart\/form-data; boundary=/);
    expect(await r.text()).toMatch(/name="a"\r\n\r\n1\r\n/);
  });

  test.each([
    ['a string with 204', 'x', { status: 204 }],
    ['a string with 205', 'x', { status: 205 }],
    ['a string with 304', 'x', { status: 304 }],
    ['bytes with 204', new Uint8Array(1), { status: 204 }],
    ['an empty string with 304', '', { status: 304 }],
    ['a status below 200', 'x', { status: 199 }],
    ['a status above 599', 'x', { status: 600 }],
    ['a statusText with a line feed', 'x', { statusText: 'a\nb' }],
    ['a bad field name', 'x', { headers: { 'a b': '1' } }],
    ['an init that is not an object', 'x', 5],
    ['null with 204 (allowed)', null, { status: 204 }],
    ['a detached ArrayBuffer', (() => { const ab = new ArrayBuffer(4); structuredClone(ab, { transfer: [ab] }); return ab; })(), undefined],
    ['a view of a detached ArrayBuffer', (() => { const ab = new ArrayBuffer(4); const v = new Uint8Array(ab, 1, 2); structuredClone(ab, { transfer: [ab] }); return v; })(), undefined],
  ])('%s: the same error as undici', (_n, body, init) => {
    const ours = outcome(() => new Response(body, init));
    const theirs = outcome(() => new undici.Response(body, init));
    expect(ours.threw).toBe(theirs.threw);
    expect(ours.message).toBe(theirs.message);
  });

  test('the bytes are copied when the Response is made, after init was read', async () => {
    const bytes = new Uint8Array([1, 2, 3]);
    const order = [];
    const init = { get status() { order.push('status'); bytes[0] = 9; return 200; } };
    const r = new Response(bytes, init);
    bytes[1] = 8;
    expect(order).toEqual(['status']);
    const u = new Uint8Array([1, 2, 3]);
    const ru = new undici.Response(u, { get status() { u[0] = 9; return 200; } });
    u[1] = 8;
    expect([...new Uint8Array(await r.arrayBuffer())]).toEqual([...new Uint8Array(await ru.arrayBuffer())]);
  });

  test('makes no stream until one is asked for, then keeps the one it made', () => {
    for (const body of ['s', new Uint8Array(2)]) {
      const r = new Response(body);
      const record = getResponseState(r).body;
      expect(record).toBeInstanceOf(KnownBody);
      expect(record.untouched).toBe(true);
      expect(record.length).toBe(body.length);
      const stream = r.body;
      expect(record.untouched).toBe(false);
      expect(r.body).toBe(stream);
    }
    // The source undici would keep (its USVString, not the string given).
    const lone = 'a\uD800';
    expect(getResponseState(new Response(lone)).body.source).toBe(getResponseState(new undici.Response(lone)).body.source);
  });

  test('clone(): both read the body, and the original is sent whole', async () => {
    const r = new Response('shared');
    const c = r.clone();
    expect(c).toBeInstanceOf(undici.Response);
    expect(await c.text()).toBe('shared');
    expect(await r.text()).toBe('shared');
    expect(() => r.clone()).toThrow(TypeError);
    const r2 = new Response('sent');
    r2.clone();
    const { responses } = await run({ segments: [get('/')], handle: () => r2 });
    expect(responses[0].body.toString()).toBe('sent');
  });

  test('its body can make another Response or a Request', async () => {
    expect(await new undici.Response(new Response('one').body).text()).toBe('one');
    expect(await new Response(new Response(new Uint8Array([116, 119, 111])).body).text()).toBe('two');
    const request = new undici.Request('http://fn/', { method: 'POST', body: new Response('three').body, duplex: 'half' });
    expect(await request.text()).toBe('three');
    expect(await new globalThis.Response(new Response('four').body).text()).toBe('four');
  });

  describe('Response.json', () => {
    test.each([
      ['an object', [{ a: [1, 'x'] }]],
      ['an object, status and fields', [{ a: 1 }, { status: 202, headers: { 'x-a': '1' } }]],
      ['its own Content-Type', ['s', { headers: { 'content-type': 'text/x-json' } }]],
      ['a string with a lone surrogate', ['a\uD800']],
    ])('%s: what undici makes', async (_n, args) => {
      const ours = Response.json(...args);
      expect(ours).toBeInstanceOf(undici.Response);
      expect(getResponseState(ours).body).toBeInstanceOf(KnownBody);
      expect(await observe(ours)).toEqual(await observe(undici.Response.json(...args)));
    });

    test.each([
      ['no argument', []],
      ['undefined', [undefined]],
      ['a function', [() => {}]],
      ['a cycle', [(() => { const o = {}; o.o = o; return o; })()]],
      ['a null-body status', [{}, { status: 204 }]],
      ['init null', [{}, null]],
      ['a bad status', [{}, { status: 700 }]],
    ])('%s: the same error as undici', (_n, args) => {
      const ours = outcome(() => Response.json(...args));
      const theirs = outcome(() => undici.Response.json(...args));
      expect(ours.threw).toBe(theirs.threw);
      expect(ours.message).toBe(theirs.message);
    });
  });

  test('with undici internals off, it is undici Response itself at work', async () => {
    useInternals(false);
    const r = new Response('plain');
    expect(getResponseState(r).body).not.toBeInstanceOf(KnownBody);
    expect(await r.text()).toBe('plain');
  });
});

describe('sending the package Response (fetch-connection.js)', () => {
  test('a body whose stream was never made is sent as it is, in one write, and no stream is made', async () => {
    let response;
    const writes = [];
    await runConnection({
      fetch: true,
      segments: [get('/')],
      handle: () => {
        response = new Response('héllo', { headers: { 'x-a': '1' } });
        return response;
      },
      write: (chunk) => writes.push(Buffer.from(chunk).toString('latin1')),
    });
    const head = 'HTTP/1.1 200 OK\r\nx-a: 1\r\ncontent-type: text/plain;charset=UTF-8\r\ncontent-length: 6\r\n\r\n';
    expect(writes).toEqual([Buffer.concat([b(head), Buffer.from('héllo')]).toString('latin1')]);
    expect(getResponseState(response).body.untouched).toBe(true);
  });

  test('a body whose stream was made but not read is still sent whole', async () => {
    const { responses } = await run({
      segments: [get('/')],
      handle: () => {
        const r = new Response(new Uint8Array([1, 2, 3]));
        void r.body;
        return r;
      },
    });
    expect([...responses[0].body]).toEqual([1, 2, 3]);
  });

  test('a body the handler began to read is sent from its stream: only what is left', async () => {
    const { responses } = await run({
      segments: [get('/')],
      handle: async () => {
        const r = new Response('abc');
        const reader = r.body.getReader();
        await reader.read();
        reader.releaseLock();
        return r;
      },
    });
    expect(responses[0].body.toString()).toBe('');
  });

  test('a body already read is a handler_error, as for an undici Response', async () => {
    const answers = [];
    for (const R of [Response, undici.Response]) {
      const { responses } = await run({ // eslint-disable-line no-await-in-loop
        segments: [get('/')],
        handle: async () => {
          const r = new R('abc');
          await r.text();
          return r;
        },
      });
      answers.push([responses[0].status, JSON.parse(responses[0].body.toString()).type]);
    }
    expect(answers).toEqual([[500, 'handler_error'], [500, 'handler_error']]);
  });
});

describe('a request body in hand (the whole body with its head)', () => {
  // The request a handler gets for `bytes` sent whole with the head, and what it did with it.
  async function serveOne(bytes, handle, extra = '') {
    let request;
    const result = await run({
      segments: [post('/', bytes, extra)],
      handle: async (r, ctx) => {
        request = r;
        return handle(r, ctx);
      },
    });
    return { request, ...result };
  }

  // The same request made by undici itself, for comparison.
  const undiciRequest = (bytes, extra = {}) =>
    new undici.Request('http://fn/', { method: 'POST', body: Buffer.from(bytes), headers: extra });

  test('reaches the handler without a stream, and its readers give what undici gives', async () => {
    const readers = {
      arrayBuffer: async (r) => [...new Uint8Array(await r.arrayBuffer())],
      bytes: async (r) => { const u = await r.bytes(); return [u.constructor.name, [...u]]; },
      text: (r) => r.text(),
      json: (r) => r.json(),
    };
    for (const [name, read] of Object.entries(readers)) {
      for (const body of ['{"a":[1,"é"]}', '\uFEFF{"bom":1}', '{bad json', '']) {
        let state;
        let ours;
        await serveOne(body, async (r) => { // eslint-disable-line no-await-in-loop
          state = getRequestState(r).body;
          ours = {
            before: r.bodyUsed,
            first: await settle(read(r)),
            after: r.bodyUsed,
            again: await settle(read(r)),
            locked: r.body === null ? null : r.body.locked,
          };
          return new Response('');
        });
        const u = undiciRequest(body);
        const theirs = {
          before: u.bodyUsed,
          first: await settle(read(u)), // eslint-disable-line no-await-in-loop
          after: u.bodyUsed,
          again: await settle(read(u)), // eslint-disable-line no-await-in-loop
          locked: u.body === null ? null : u.body.locked,
        };
        if (body === '') {
          expect(state).toBeNull(); // Content-Length: 0: no body at all
          continue;
        }
        expect(state).toBeInstanceOf(InHandBody);
        expect([name, body, ours]).toEqual([name, body, theirs]);
      }
    }
  });

  test('arrayBuffer() gives an ArrayBuffer of the body alone', async () => {
    let ab;
    await serveOne('xyz', async (r) => { ab = await r.arrayBuffer(); return new Response(''); });
    expect(ab).toBeInstanceOf(ArrayBuffer);
    expect(ab.byteLength).toBe(3);
  });

  test('request.body streams the bytes as one Buffer, and reading it uses the body', async () => {
    const seen = {};
    await serveOne('stream me', async (r) => {
      const chunks = [];
      for await (const c of r.body) chunks.push(c);
      seen.buffers = chunks.every((c) => Buffer.isBuffer(c));
      seen.text = Buffer.concat(chunks).toString();
      seen.used = r.bodyUsed;
      seen.again = await settle(r.text());
      return new Response('');
    });
    expect(seen).toEqual({
      buffers: true,
      text: 'stream me',
      used: true,
      again: { rejected: 'TypeError', message: 'Body is unusable: Body has already been read' },
    });
  });

  test('clone(), new Request(request) and a body passed on all read the bytes', async () => {
    const seen = {};
    await serveOne('copy', async (r) => {
      const c = r.clone();
      seen.clone = [await c.text(), await r.clone().text()];
      seen.fromRequest = await new undici.Request('http://other/', r).text();
      seen.used = r.bodyUsed;
      return new Response('');
    });
    await serveOne('pass', async (r) => {
      seen.passed = await new undici.Request('http://other/', { method: 'PUT', body: r.body, duplex: 'half' }).text();
      return new Response('');
    });
    expect(seen).toEqual({ clone: ['copy', 'copy'], fromRequest: 'copy', used: true, passed: 'pass' });
  });

  test('fetch() sends it on as a body, over 127.0.0.1', async () => {
    const received = [];
    const server = http.createServer((req, res) => {
      const parts = [];
      req.on('data', (d) => parts.push(d));
      req.on('end', () => {
        received.push(Buffer.concat(parts).toString());
        res.end('ok');
      });
    });
    await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${server.address().port}/`;
    try {
      await serveOne('upstream-1', async (r) => new Response(await (await undici.fetch(url, { method: 'POST', body: r.body, duplex: 'half' })).text()));
      await serveOne('upstream-2', async (r) => new Response(await (await globalThis.fetch(url, { method: 'POST', body: r.body, duplex: 'half' })).text()));
      await serveOne('upstream-3', async (r) => new Response(await (await undici.fetch(new undici.Request(url, r))).text()));
    } finally {
      server.close();
    }
    expect(received).toEqual(['upstream-1', 'upstream-2', 'upstream-3']);
  });

  test('is copied out of the read buffer, which is free for the next read at once', async () => {
    let text;
    const conn = new FetchConnection({
      limits: { maxHead: 65536, maxBody: 0 },
      handle: async (r) => {
        await new Promise((resolve) => setImmediate(resolve));
        text = await r.text();
        return new Response('');
      },
      log: () => {},
      sink: { write() {}, end() {} },
    });
    const chunk = post('/', 'original');
    conn.push(chunk);
    expect(conn.retainsInput).toBe(false);
    chunk.fill(0x21); // the reader reuses its buffer
    await new Promise((resolve) => setTimeout(resolve, 5));
    expect(text).toBe('original');
  });

  test('a body that comes in two reads streams in as before', async () => {
    let state;
    let text;
    await run({
      segments: [b('POST / HTTP/1.1\r\nHost: fn\r\nContent-Length: 6\r\n\r\nabc'), b('def')],
      perSegment: true,
      handle: async (r) => {
        state = getRequestState(r).body;
        text = await r.text();
        return new Response('');
      },
    });
    expect(state).not.toBeInstanceOf(InHandBody);
    expect(text).toBe('abcdef');
  });

  test('left unread, it is dropped and the next request is served (§6.3)', async () => {
    const { code, responses } = await run({
      segments: [Buffer.concat([post('/a', 'unread'), post('/b', 'read'), get('/c')])],
      handle: async (r) => new Response(r.url.endsWith('/b') ? await r.text() : 'no'),
    });
    expect(code).toBe(0);
    expect(responses.map((r) => r.body.toString())).toEqual(['no', 'read', 'no']);
  });

  test('the request is an undici Request with a signal of its own that never aborts', async () => {
    const seen = {};
    await serveOne('s', (r) => {
      seen.isRequest = r instanceof Request && r instanceof undici.Request;
      seen.name = r.constructor.name;
      seen.signal = r.signal instanceof AbortSignal && !r.signal.aborted && r.signal === r.signal;
      seen.ownSignal = Object.getOwnPropertyDescriptor(r, 'signal').enumerable;
      seen.tag = Object.prototype.toString.call(r);
      const ac = new AbortController();
      const made = new r.constructor('http://fn/x', { signal: ac.signal });
      ac.abort();
      seen.madeSignal = made.signal.aborted;
      return new Response('');
    });
    expect(seen).toEqual({ isRequest: true, name: 'Request', signal: true, ownSignal: false, tag: '[object Request]', madeSignal: true });
  });

  test('with undici internals off, the handler reads it the same', async () => {
    useInternals(false);
    let text;
    await serveOne('public', async (r) => { text = await r.text(); return new Response(''); });
    expect(text).toBe('public');
  });
});
