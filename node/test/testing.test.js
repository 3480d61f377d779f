'use strict';

// afterburn-runtime/testing, and through it the fetch-style adapter: a handler or a listener
// called in-process through the worker's own core, as users unit-test their functions.

const express = require('express');
const { invoke, invokeListener, IncompleteResponseError } = require('afterburn-runtime/testing');
const { Request, Response, Headers } = require('afterburn-runtime');

const quiet = { log: () => {} };

describe('invoke (fetch-style handlers)', () => {
  test('the handler sees undici classes, the raw method, URL, headers, body and context', async () => {
    let seen;
    const res = await invoke(async (request, ctx) => {
      seen = {
        isRequest: request instanceof Request,
        hasHeaders: request.headers instanceof Headers,
        url: request.url,
        method: request.method,
        accept: request.headers.get('accept'),
        body: await request.text(),
        id: ctx.requestId,
        deadline: ctx.hasDeadline,
        left: ctx.timeRemaining(),
      };
      return new Response('done', { status: 201, headers: { 'x-answer': '42' } });
    }, 'http://fn.example/orders?dry=1', { method: 'PATCH', body: 'payload', headers: { accept: 'text/plain' } },
    { requestId: 'rid-t1', timeoutMs: 5000 });
    expect(seen).toMatchObject({
      isRequest: true,
      hasHeaders: true,
      url: 'http://fn.example/orders?dry=1',
      method: 'PATCH',
      accept: 'text/plain',
      body: 'payload',
      id: 'rid-t1',
      deadline: true,
    });
    expect(seen.left).toBeGreaterThan(4000);
    expect(res).toBeInstanceOf(Response);
    expect(res.status).toBe(201);
    expect(res.headers.get('x-answer')).toBe('42');
    expect(res.headers.get('content-length')).toBe('4'); // a body known at once gets a length
    expect(await res.text()).toBe('done');
  });

  test("a Response from Node's global copy of the classes is accepted too", async () => {
    const res = await invoke(() => new globalThis.Response('global', { headers: [['set-cookie', 'a=1'], ['set-cookie', 'b=2']] }),
      'http://fn/');
    expect(await res.text()).toBe('global');
    expect(res.headers.getSetCookie()).toEqual(['a=1', 'b=2']);
  });

  // A stream whose next chunk takes a while to come: the library cannot know its length.
  const later = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

  test('a streamed body is sent chunked, chunk by chunk, and the request body streams in', async () => {
    const res = await invoke(async (request) => {
      const reader = request.body.getReader();
      const encoder = new TextEncoder();
      return new Response(new ReadableStream({
        async pull(controller) {
          const { done, value } = await reader.read();
          if (!done) {
            controller.enqueue(encoder.encode(`[${Buffer.from(value).toString().toUpperCase()}]`));
            return;
          }
          await later(5);
          controller.enqueue(encoder.encode('!'));
          controller.close();
        },
      }));
    }, 'http://fn/stream', { method: 'POST', body: 'abc' });
    expect(res.headers.get('transfer-encoding')).toBe('chunked');
    expect(await res.text()).toBe('[ABC]!');
  });

  test('a body that is all there at once gets Content-Length even from a stream', async () => {
    const res = await invoke(() => new Response(new ReadableStream({
      start(controller) {
        controller.enqueue(new TextEncoder().encode('whole'));
        controller.close();
      },
    })), 'http://fn/');
    expect(res.headers.get('content-length')).toBe('5');
    expect(await res.text()).toBe('whole');
  });

  test('a target starting with // stays a path on the request Host', async () => {
    const res = await invoke((request) => new Response(request.url), 'http://fn/x', {
      headers: { 'x-probe': '1' },
    });
    expect(await res.text()).toBe('http://fn/x');
    const { requestURL } = require('../lib/fetch');
    expect(requestURL('//evil.example/p?q', 'fn').href).toBe('http://fn//evil.example/p?q');
  });

  test('204, HEAD and empty bodies carry no body', async () => {
    const none = await invoke(() => new Response(null, { status: 204 }), 'http://fn/');
    expect(none.status).toBe(204);
    expect(none.headers.get('content-length')).toBeNull();
    const head = await invoke(() => new Response('would-be body'), 'http://fn/', { method: 'HEAD' });
    expect(head.body).toBeNull();
    const empty = await invoke(() => new Response(''), 'http://fn/');
    expect(empty.headers.get('content-length')).toBe('0');
  });

  test('a throwing handler gives the 500 handler_error body, with its stack logged', async () => {
    const logs = [];
    const res = await invoke(() => { throw new Error('kaput'); }, 'http://fn/x', undefined,
      { requestId: 'rid-err', log: (t) => logs.push(t) });
    expect(res.status).toBe(500);
    expect(res.headers.get('afterburn-error')).toBe('handler_error');
    expect(await res.json()).toMatchObject({ type: 'handler_error', request_id: 'rid-err' });
    expect(logs.join('')).toMatch(/^\[rid-err\][^\n]*\n[\s\S]*kaput/);
  });

  test('returning something that is not a Response is a handler_error', async () => {
    const logs = [];
    const res = await invoke(() => ({ hello: 'world' }), 'http://fn/', undefined, { log: (t) => logs.push(t) });
    expect(res.status).toBe(500);
    expect(logs.join('')).toContain('not a Response');
  });

  test('a body stream that fails after the head rejects with IncompleteResponseError', async () => {
    let pulls = 0;
    const failing = () => new Response(new ReadableStream({
      start(controller) {
        controller.enqueue(new TextEncoder().encode('partial'));
      },
      async pull(controller) {
        await later(5);
        if (++pulls === 1) controller.enqueue(new TextEncoder().encode('more'));
        else throw new Error('upstream gone');
      },
    }));
    await expect(invoke(failing, 'http://fn/', undefined, quiet)).rejects.toBeInstanceOf(IncompleteResponseError);
  });
});

describe("undici's classes", () => {
  test('are the very classes of the undici package (loaded from its fetch modules alone); Response a subclass', () => {
    const undici = require('undici');
    const runtime = require('afterburn-runtime');
    for (const name of ['Request', 'Headers', 'FormData']) expect(runtime[name]).toBe(undici[name]);
    // Its string and bytes bodies make no stream until asked for (lib/known-body.js).
    expect(Object.getPrototypeOf(runtime.Response)).toBe(undici.Response);
  });

  test('take every body kind: FormData, URLSearchParams, Blob, JSON', async () => {
    const { FormData } = require('afterburn-runtime');
    const echo = async (request) => new Response(`${request.headers.get('content-type')}|${await request.text()}`);
    const form = new FormData();
    form.append('a', '1');
    const multipart = await (await invoke(echo, 'http://fn/', { method: 'POST', body: form })).text();
    expect(multipart).toMatch(/^multipart\/form-data; boundary=.*name="a"\r\n\r\n1\r\n/s);
    const params = await (await invoke(echo, 'http://fn/', { method: 'POST', body: new URLSearchParams({ q: 'x y' }) })).text();
    expect(params).toBe('application/x-www-form-urlencoded;charset=UTF-8|q=x+y');
    const blob = await (await invoke(echo, 'http://fn/', { method: 'POST', body: new Blob(['b'], { type: 'text/x' }) })).text();
    expect(blob).toBe('text/x|b');
    const json = await invoke(() => Response.json({ ok: true }), 'http://fn/');
    expect(await json.json()).toEqual({ ok: true });
  });
});

describe('invokeListener (Node listeners)', () => {
  test('an Express app, in-process', async () => {
    const app = express();
    app.use(express.json());
    app.post('/echo/:id', (req, res) => res.json({ id: req.params.id, body: req.body }));
    const res = await invokeListener(app, 'http://fn/echo/7', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ a: [1, 2] }),
    });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ id: '7', body: { a: [1, 2] } });
  });

  test('a plain listener that throws gives the handler_error response', async () => {
    const res = await invokeListener(() => { throw new Error('nope'); }, 'http://fn/', undefined, quiet);
    expect(res.status).toBe(500);
  });
});

describe('ctx.log through invoke and invokeListener', () => {
  test.each([
    ['invoke', (log) => invoke((request, ctx) => {
      ctx.log('seen %s', new URL(request.url).pathname);
      return new Response('ok');
    }, 'http://fn/a', undefined, { requestId: 'rid-log', log })],
    ['invokeListener', (log) => invokeListener((req, res) => {
      require('afterburn-runtime').context(req).log('seen %s', req.url);
      res.end('ok');
    }, 'http://fn/a', undefined, { requestId: 'rid-log', log })],
  ])('%s hands the tagged line to options.log', async (_name, call) => {
    const records = [];
    const res = await call((text) => records.push(text));
    expect(await res.text()).toBe('ok');
    expect(records).toEqual(['[rid-log] seen /a\n']);
  });
});
