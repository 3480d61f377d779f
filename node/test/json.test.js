'use strict';

// json(handler, { validate, parse, stringify }) (lib/json.js): JSON in and out with the
// user's own parser, validator and serializer; undecodable input is 400 bad_request with the
// §8.1 body naming the offending position or fields (§8.1, §8.2), never the validator's or
// parser's message. Validators are stand-ins shaped as zod, Ajv, yup and Standard Schema
// report their failures.

const { json, Response } = require('..');
const { invoke } = require('../testing');

const post = (handler, body, options = { requestId: 'rid-json' }) =>
  invoke(handler, 'http://fn/orders', { method: 'POST', body, headers: { 'content-type': 'application/json' } }, options);
const echo = (value) => ({ got: value });

async function badRequest(res) {
  expect([res.status, res.headers.get('afterburn-error'), res.headers.get('content-type')])
    .toEqual([400, 'bad_request', 'application/json']);
  const body = await res.json();
  expect(Object.keys(body).sort()).toEqual(['message', 'request_id', 'type']);
  expect([body.type, body.request_id]).toEqual(['bad_request', 'rid-json']);
  return body.message;
}

// A zod-like error: issues with paths of keys, messages that quote the input.
class ZodLikeError extends Error {
  constructor(issues) {
    super(JSON.stringify(issues));
    this.issues = issues;
  }
}

test('good JSON: the handler gets the parsed value; its result goes back as JSON (200)', async () => {
  let seen;
  const res = await post(json((value, request, ctx) => {
    seen = [request.method, ctx.requestId];
    return echo(value);
  }), '{"n": 1}');
  expect([res.status, res.headers.get('content-type')]).toEqual([200, 'application/json']);
  expect(await res.json()).toEqual({ got: { n: 1 } });
  expect(seen).toEqual(['POST', 'rid-json']);
});

test('a Response from the handler goes as it is; undefined is 204', async () => {
  const asIs = await post(json(() => new Response('raw', { status: 201 })), '1');
  expect([asIs.status, await asIs.text()]).toEqual([201, 'raw']);
  const none = await post(json(() => undefined), '1');
  expect([none.status, await none.text()]).toEqual([204, '']);
});

test.each([
  ['an empty body', '', /^the request body is empty; want JSON$/],
  ['bad JSON', '{"a": }', /^the request body is not valid JSON( \(at position \d+\))?$/],
  ['truncated JSON', '{"password": "hunter2', /^the request body is not valid JSON/],
])('%s: 400 bad_request, the handler not called, no request bytes in the message', async (_case, body, want) => {
  const handler = jest.fn();
  const message = await badRequest(await post(json(handler), body));
  expect(message).toMatch(want);
  expect(message).not.toContain('hunter2');
  expect(handler).not.toHaveBeenCalled();
});

test('a user parser is honoured, and its failure is a 400', async () => {
  const parse = (text) => {
    if (text.includes('__proto__')) throw new SyntaxError('Object contains forbidden prototype property');
    return JSON.parse(text, (k, v) => (typeof v === 'number' ? BigInt(v) : v));
  };
  const ok = await post(json((v) => String(v.n), { parse }), '{"n": 7}');
  expect(await ok.json()).toBe('7');
  expect(await badRequest(await post(json(echo, { parse }), '{"__proto__": {}}'))).toBe('the request body is not valid JSON');
});

test('a user serializer is honoured, and its failure is the handler\'s (500 handler_error)', async () => {
  const stringify = (v) => JSON.stringify(v, (k, x) => (typeof x === 'bigint' ? x.toString() : x), 2);
  const ok = await post(json(() => ({ big: 2n ** 70n }), { stringify }), '{}');
  expect(await ok.text()).toBe('{\n  "big": "1180591620717411303424"\n}');
  const failed = await post(json(() => ({ big: 1n })), '{}', { requestId: 'rid-json', log: () => {} });
  expect([failed.status, failed.headers.get('afterburn-error')]).toEqual([500, 'handler_error']);
});

describe('validate', () => {
  test.each([
    ['throws with zod-like issues', () => {
      throw new ZodLikeError([
        { path: ['items', 0, 'price'], message: 'Expected number, received "free"' },
        { path: ['name'], message: 'Required' },
      ]);
    }, 'the request body failed validation at /items/0/price, /name'],
    ['is Ajv-like: returns false with validate.errors', Object.assign(() => false, {
      errors: [{ instancePath: '/items/1', message: 'must be object' }, { instancePath: '', message: 'must have required property "id"' }],
    }), 'the request body failed validation at /items/1, /'],
    ['throws a yup-like error with inner paths', () => {
      throw Object.assign(new Error('2 errors'), { inner: [{ path: 'items[0].price' }, { path: 'name' }] });
    }, 'the request body failed validation at items[0].price, name'],
    ['throws valibot-like issues with { key } path items', () => {
      throw new ZodLikeError([{ path: [{ key: 'a/b' }, { key: 'c~d' }] }]);
    }, 'the request body failed validation at /a~1b/c~0d'],
    ['throws a plain Error', () => { throw new Error('secret: price "free" is wrong'); }, 'the request body failed validation'],
    ['rejects (an async validator)', async () => { throw new ZodLikeError([{ path: ['x'] }]); }, 'the request body failed validation at /x'],
  ])('that %s: 400 with the field paths only', async (_case, validate, want) => {
    const handler = jest.fn();
    const message = await badRequest(await post(json(handler, { validate }), '{"items": [{"price": "free"}]}'));
    expect(message).toBe(want);
    expect(message).not.toMatch(/free|Required|must/);
    expect(handler).not.toHaveBeenCalled();
  });

  test('many paths: ten named, the rest counted; long ones cut', async () => {
    const issues = Array.from({ length: 12 }, (_, i) => ({ path: [`k${i}`] }));
    issues[0].path = ['x'.repeat(300)];
    const message = await badRequest(await post(json(echo, { validate: () => { throw new ZodLikeError(issues); } }), '{}'));
    expect(message).toMatch(/^the request body failed validation at \/x{99}\.\.\., \/k1, .*\/k9 and 2 more$/);
  });

  test.each([
    ['true', () => true, { n: 1 }],
    ['undefined', () => undefined, { n: 1 }],
    ['a transformed value (zod\'s parse)', (v) => ({ ...v, n: v.n + 1 }), { n: 2 }],
    ['a promise of one', async (v) => ({ ...v, async: true }), { n: 1, async: true }],
  ])('that returns %s passes the right value on', async (_case, validate, want) => {
    const res = await post(json(echo, { validate }), '{"n": 1}');
    expect(await res.json()).toEqual({ got: want });
  });

  test('a Standard Schema (~standard.validate): its value, or its issues as paths', async () => {
    const schema = {
      '~standard': {
        version: 1,
        vendor: 'test',
        validate: (v) => (typeof v.n === 'number' ? { value: { n: v.n * 10 } } : { issues: [{ message: 'bad', path: ['n'] }] }),
      },
    };
    expect(await (await post(json(echo, { validate: schema }), '{"n": 2}')).json()).toEqual({ got: { n: 20 } });
    expect(await badRequest(await post(json(echo, { validate: schema }), '{"n": "2"}'))).toBe('the request body failed validation at /n');
  });
});

test.each([
  [() => json('x'), /json\(handler\) needs a function/],
  [() => json(echo, null), /options must be an object/],
  [() => json(echo, { validate: 'x' }), /validate must be a function or a Standard Schema/],
  [() => json(echo, { parse: 1 }), /parse must be a function/],
  [() => json(echo, { stringify: {} }), /stringify must be a function/],
])('bad arguments are refused at once (%#)', (call, message) => {
  expect(call).toThrow(message);
});
