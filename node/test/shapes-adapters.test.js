'use strict';

// The adapters' rules that conformance/shapes leaves to each platform (lib/shape-*.js): what
// the OpenFaaS template, Lambda and faas-js-runtime do, through the same core a worker runs
// (afterburn-runtime/testing). The shared vectors are in shapes.test.js.

const path = require('node:path');
const { spawnSync } = require('node:child_process');
const { CloudEvent } = require('cloudevents');
const { invoke } = require('../testing');
const { openfaas, lambda, cloudevents } = require('..');

/** invoke, with the records the library logged. */
async function call(handler, target, init, options = {}) {
  const logs = [];
  const res = await invoke(handler, `http://fn${target}`, init, { requestId: 'rid', log: (t) => logs.push(t), ...options });
  const body = Buffer.from(await res.arrayBuffer());
  return { status: res.status, headers: res.headers, text: body.toString(), body, log: logs.join('') };
}

const expectHandlerError = (got) => {
  expect([got.status, got.headers.get('afterburn-error'), JSON.parse(got.text).type]).toEqual([500, 'handler_error', 'handler_error']);
};
const expectBadRequest = (got) => {
  expect([got.status, got.headers.get('afterburn-error'), JSON.parse(got.text).type]).toEqual([400, 'bad_request', 'bad_request']);
};

describe('openfaas: the template\'s rules', () => {
  test('a value returned without succeed is succeeded with', async () => {
    const got = await call(openfaas(async () => ({ ok: 1 })), '/');
    expect([got.status, got.headers.get('content-type'), got.text]).toEqual([200, 'application/json', '{"ok":1}']);
  });

  test('a string is sent as Express sends it: text/html unless the handler set a type', async () => {
    const got = await call(openfaas(async (e, c) => c.succeed('<b>hi</b>')), '/');
    expect([got.headers.get('content-type'), got.text]).toEqual(['text/html; charset=utf-8', '<b>hi</b>']);
    const typed = await call(openfaas(async (e, c) => c.headers({ 'Content-Type': 'text/plain' }).succeed('hi')), '/');
    expect(typed.headers.get('content-type')).toBe('text/plain');
  });

  test('a Buffer is sent as bytes', async () => {
    const got = await call(openfaas(async (e, c) => c.succeed(Buffer.from([0, 255]))), '/');
    expect([got.headers.get('content-type'), [...got.body]]).toEqual(['application/octet-stream', [0, 255]]);
  });

  test('fail(err): the status set (500 if still 200), String(err) as the body, err logged', async () => {
    const got = await call(openfaas(async (e, c) => c.fail(new Error('nope'))), '/');
    expect([got.status, got.text]).toEqual([500, 'Error: nope']);
    expect(got.log).toContain('[rid] Error: nope');
    const status = await call(openfaas(async (e, c) => c.status(400).fail('missing name')), '/');
    expect([status.status, status.text]).toEqual([400, 'missing name']);
  });

  test('the third argument is the template\'s callback', async () => {
    const got = await call(openfaas((e, c, cb) => { setTimeout(() => cb(undefined, 'later'), 5); return new Promise((r) => setTimeout(r, 10)); }), '/');
    expect(got.text).toBe('later');
  });

  test('a handler that throws is 500 handler_error with its stack logged (§8.3), not its message sent', async () => {
    const got = await call(openfaas(async () => { throw new Error('secret'); }), '/');
    expectHandlerError(got);
    expect(got.text).not.toContain('secret');
    expect(got.log).toContain('secret');
  });

  test('a failure after succeed is logged; the response stays', async () => {
    const got = await call(openfaas(async (e, c) => { c.succeed('done'); throw new Error('late'); }), '/');
    expect([got.status, got.text]).toEqual([200, 'done']);
    expect(got.log).toMatch(/failed after it answered[\s\S]*late/);
  });

  test.each([
    ['application/x-www-form-urlencoded', 'a=1&a=2&b=x+y', { a: ['1', '2'], b: 'x y' }],
    ['application/json; charset=utf-8', '{"k":[1]}', { k: [1] }],
    ['application/json', '', {}],
    ['text/csv', 'a,b', 'a,b'],
  ])('a %s body is parsed as body-parser does', async (type, body, want) => {
    let seen;
    await call(openfaas(async (event) => { seen = event.body; }), '/', { method: 'POST', headers: { 'content-type': type }, body });
    expect(seen).toEqual(want);
  });

  test('JSON that is not an object or array is refused, as body-parser\'s strict mode does', async () => {
    expectBadRequest(await call(openfaas(async () => 'x'), '/', { method: 'POST', headers: { 'content-type': 'application/json' }, body: '"x"' }));
  });

  test('rawBody (RAW_BODY=true in the template): every body a Buffer', async () => {
    let seen;
    await call(openfaas(async (event) => { seen = event.body; }, { rawBody: true }), '/', { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
    expect(Buffer.isBuffer(seen) && seen.toString()).toBe('{}');
  });

  test('the context carries the AfterBurn context', async () => {
    const got = await call(openfaas(async (e, c) => c.afterburn.requestId), '/');
    expect(got.text).toBe('rid');
  });
});

describe('lambda: invocation and result rules', () => {
  test('a callback handler is waited for', async () => {
    const got = await call(lambda((event, context, callback) => { setTimeout(() => callback(null, { statusCode: 202, body: 'cb' }), 5); }), '/');
    expect([got.status, got.text]).toEqual([202, 'cb']);
  });

  test('context.succeed and context.fail', async () => {
    expect((await call(lambda((event, context, _cb) => context.succeed({ statusCode: 200, body: 'ok' })), '/')).text).toBe('ok');
    expectHandlerError(await call(lambda((event, context, _cb) => context.fail(new Error('no'))), '/'));
  });

  test('a synchronous throw and a callback error are handler errors', async () => {
    expectHandlerError(await call(lambda(() => { throw new Error('sync'); }), '/'));
    expectHandlerError(await call(lambda((e, c, cb) => cb('a string error')), '/'));
  });

  test.each([
    ['a body that is no string', { statusCode: 200, body: { a: 1 } }],
    ['headers that are an array', { statusCode: 200, headers: [['a', 'b']] }],
    ['cookies that are a string', { statusCode: 200, cookies: 'a=1' }],
    ['a status of 99', { statusCode: 99 }],
    ['a BigInt result', { big: 1n }],
  ])('%s is a handler error', async (_name, result) => {
    const got = await call(lambda(async () => result), '/');
    expectHandlerError(got);
    expect(got.log).toContain('afterburn: lambda:');
  });

  test('undefined is the JSON null, as Lambda serialises it', async () => {
    const got = await call(lambda(async () => undefined), '/');
    expect([got.status, got.text]).toEqual([200, 'null']);
  });

  test('without a deadline, getRemainingTimeInMillis is the longest timer', async () => {
    const got = await call(lambda(async (e, c) => ({ statusCode: 200, body: String(c.getRemainingTimeInMillis()) })), '/');
    expect(got.text).toBe('2147483647');
  });

  test('a text type that is not valid UTF-8 is base64, no byte lost (§13)', async () => {
    let seen;
    await call(lambda(async (event) => { seen = [event.body, event.isBase64Encoded]; }), '/',
      { method: 'POST', headers: { 'content-type': 'text/plain' }, body: new Uint8Array([0x68, 0xff]) });
    expect(seen).toEqual([Buffer.from([0x68, 0xff]).toString('base64'), true]);
  });

  test('+ stays + in queryStringParameters; %XX is decoded', async () => {
    let seen;
    await call(lambda(async (event) => { seen = event.queryStringParameters; }), '/?a=1+2&b=%41&c');
    expect(seen).toEqual({ a: '1+2', b: 'A', c: '' });
  });
});

describe('cloudevents: what faas-js-runtime does, and what the SDK alone would let through', () => {
  const binary = { 'ce-specversion': '1.0', 'ce-id': 'e1', 'ce-source': '/s', 'ce-type': 't' };
  const post = (headers, body = '') => ({ method: 'POST', headers, body });

  test('a string is text/plain; { headers } alone is 204; another value JSON', async () => {
    const text = await call(cloudevents(async () => 'hi'), '/', post(binary));
    expect([text.status, text.headers.get('content-type'), text.text]).toEqual([200, 'text/plain; charset=utf-8', 'hi']);
    const h = await call(cloudevents(async () => ({ headers: { 'X-Id': '7' } })), '/', post(binary));
    expect([h.status, h.headers.get('x-id')]).toEqual([204, '7']);
    const j = await call(cloudevents(async () => [1, 2]), '/', post(binary));
    expect([j.status, j.text]).toEqual([200, '[1,2]']);
  });

  test('the context: query, body, headers, the event; cloudEventResponse builds the reply', async () => {
    const got = await call(cloudevents(async (context, event) => context.cloudEventResponse({ seen: [context.q, context.query.q, context.body, event.id] })
      .id('r1').source('/fn').type('reply').version('1.0').response()),
    '/?q=1', post({ ...binary, 'content-type': 'application/json' }, '{"n":1}'));
    expect([got.status, got.headers.get('ce-id'), got.headers.get('ce-type'), JSON.parse(got.text)])
      .toEqual([200, 'r1', 'reply', { seen: ['1', '1', { n: 1 }, 'e1'] }]);
  });

  test('binary data is a Buffer in, and a Buffer CloudEvent goes out as bytes', async () => {
    const got = await call(cloudevents(async (context, event) => new CloudEvent({ source: '/fn', type: 'echo', datacontenttype: 'application/octet-stream', data: event.data })),
      '/', post({ ...binary, 'content-type': 'application/octet-stream' }, new Uint8Array([0, 1, 255])));
    expect([got.headers.get('content-type'), [...got.body]]).toEqual(['application/octet-stream', [0, 1, 255]]);
  });

  test.each([
    ['a batch', { 'content-type': 'application/cloudevents-batch+json' }, '[]'],
    ['a structured event without an id (the SDK would make one up)', { 'content-type': 'application/cloudevents+json' }, '{"specversion":"1.0","source":"/s","type":"t"}'],
    ['a structured event that is an array', { 'content-type': 'application/cloudevents+json' }, '[{}]'],
    ['specversion 0.9', { ...binary, 'ce-specversion': '0.9' }, ''],
    ['a time that is no time', { ...binary, 'ce-time': 'yesterday' }, ''],
    ['JSON data that is not JSON', { ...binary, 'content-type': 'application/json' }, '{"a":'],
  ])('%s: 400 bad_request', async (_name, headers, body) => {
    let called = false;
    const got = await call(cloudevents(async () => { called = true; }), '/', post(headers, body));
    expectBadRequest(got);
    expect(called).toBe(false);
  });

  test('without the cloudevents package, cloudevents() says what to install', () => {
    // A preload that hides the package, as in a project that did not install it.
    const hide = "const M=require('module');const r=M._resolveFilename;M._resolveFilename=function(req,...a){if(req==='cloudevents'){const e=new Error(\"Cannot find module 'cloudevents'\");e.code='MODULE_NOT_FOUND';throw e;}return r.call(this,req,...a);};";
    const { stderr, status } = spawnSync(process.execPath, ['-e', `${hide}require(${JSON.stringify(path.resolve(__dirname, '..'))}).cloudevents(() => {})`], { encoding: 'utf8' });
    expect(status).not.toBe(0);
    expect(stderr).toContain('cloudevents(handler) needs the "cloudevents" package (npm install cloudevents@10)');
  });
});
