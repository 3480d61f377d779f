'use strict';

// The fetch-style core under the real watchdog (go/bin/afterburn-watchdog), through the
// library's own I/O shell (lib/child.js): the pipes, pausing and resuming the request pipe,
// synchronous writes, the exit status.

const path = require('node:path');
const crypto = require('node:crypto');
const { startWatchdog, NODE_DIR } = require('./support/watchdog');

let wd;
beforeAll(async () => {
  wd = await startWatchdog([process.execPath, path.join(NODE_DIR, 'test/apps/fetch-app.js')], { flags: ['-exec_timeout', '30s'] });
});
afterAll(async () => {
  if (wd) expect((await wd.stop()).code).toBe(0);
});

test('hello, many times on one worker', async () => {
  for (let i = 0; i < 50; i++) {
    const res = await fetch(`${wd.url}/hello`); // eslint-disable-line no-await-in-loop
    expect([res.status, await res.text(), res.headers.get('content-length')]).toEqual([200, 'Hello, world!\n', '14']); // eslint-disable-line no-await-in-loop
  }
});

test('a 32 MiB body streams through and back', async () => {
  const body = crypto.randomBytes(32 << 20);
  const res = await fetch(`${wd.url}/echo`, { method: 'POST', body });
  const got = Buffer.from(await res.arrayBuffer());
  expect(res.status).toBe(200);
  expect(got.length).toBe(body.length);
  expect(got.equals(body)).toBe(true);
});

test('a chunked request body of 8 MiB is read whole', async () => {
  const body = crypto.randomBytes(8 << 20);
  const stream = new ReadableStream({
    start(controller) {
      for (let i = 0; i < body.length; i += 1 << 20) controller.enqueue(body.subarray(i, i + (1 << 20)));
      controller.close();
    },
  });
  const res = await fetch(`${wd.url}/sha256`, { method: 'POST', body: stream, duplex: 'half' });
  expect(await res.json()).toEqual({ len: body.length, sha256: crypto.createHash('sha256').update(body).digest('hex') });
});

test.each([1, 200, 70000, 3 << 20])('bodies of %i bytes read after a pause arrive intact', async (size) => {
  for (let i = 0; i < 3; i++) {
    const body = crypto.randomBytes(size);
    const res = await fetch(`${wd.url}/sha256-later`, { method: 'POST', body }); // eslint-disable-line no-await-in-loop
    expect(await res.json()).toEqual({ len: size, sha256: crypto.createHash('sha256').update(body).digest('hex') }); // eslint-disable-line no-await-in-loop
  }
});

test('a streamed response arrives chunk by chunk', async () => {
  const res = await fetch(`${wd.url}/ticks`);
  expect(await res.text()).toBe('tick 0\ntick 1\ntick 2\ntick 3\ntick 4\n');
});

test('a throwing handler is a 500 handler_error and the worker keeps serving', async () => {
  const res = await fetch(`${wd.url}/throw`, { headers: { 'X-Request-Id': 'e2e-throw' } });
  expect(res.status).toBe(500);
  expect(await res.json()).toMatchObject({ type: 'handler_error', request_id: 'e2e-throw' });
  await wd.waitLog(/\[e2e-throw\] afterburn: handler failed on GET \/throw/);
  expect((await fetch(`${wd.url}/hello`)).status).toBe(200);
});

test('the context has the request id and deadline; the fields are gone (§5.3)', async () => {
  const res = await fetch(`${wd.url}/context`, { headers: { 'X-Request-Id': 'e2e-ctx' } });
  const got = await res.json();
  expect(got).toMatchObject({ id: 'e2e-ctx', deadline: true });
  expect(got.fields.filter((n) => n.startsWith('afterburn-'))).toEqual([]);
});
