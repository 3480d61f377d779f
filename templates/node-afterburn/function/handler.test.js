'use strict';

// Run during the image build (npm test): a failure stops the build. invoke() sends the
// request through the same parser and response framing a worker uses, without a watchdog.
const test = require('node:test');
const assert = require('node:assert/strict');
const { invoke } = require('afterburn-runtime/testing');
const handler = require('./handler');

test('GET greets by name', async () => {
  const res = await invoke(handler, 'http://function/?name=Ada', undefined, { requestId: 'test-1' });
  assert.equal(res.status, 200);
  assert.equal(await res.text(), 'Hello, Ada!\n');
  assert.equal(res.headers.get('content-type'), 'text/plain; charset=utf-8');
});

test('GET without a name', async () => {
  const res = await invoke(handler, 'http://function/');
  assert.equal(await res.text(), 'Hello, world!\n');
});

test('POST echoes the body', async () => {
  const res = await invoke(handler, 'http://function/', {
    method: 'POST',
    body: '{"n":1}',
    headers: { 'Content-Type': 'application/json' },
  });
  assert.equal(res.status, 200);
  assert.equal(await res.text(), '{"n":1}');
  assert.equal(res.headers.get('content-type'), 'application/json');
});
