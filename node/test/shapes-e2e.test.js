'use strict';

// Functions written for other platforms, copied from their own templates and documentation
// (test/apps/shapes/README.md), served unchanged under the real watchdog through the
// launcher's --shape (PROTOCOL.md §13), over real HTTP on 127.0.0.1.

const path = require('node:path');
const { startWatchdog, NODE_DIR } = require('./support/watchdog');

const LAUNCHER = path.join(NODE_DIR, 'bin/afterburn.js');
const fixture = (name) => path.join(NODE_DIR, 'test/apps/shapes', name);

/** A request's answer, with what a failure message needs: the watchdog's log. */
async function send(wd, target, init = {}) {
  const res = await fetch(`${wd.url}${target}`, init);
  const body = await res.text();
  return { status: res.status, headers: res.headers, body, log: wd.log() };
}

describe.each([
  ['openfaas', 'openfaas-node20/handler.js'],
  ['lambda', 'lambda-url-tutorial/index.js'],
  ['cloudevents', 'knative-cloudevents/index.js'],
])('--shape %s: the platform\'s own handler under the watchdog', (shape, file) => {
  let wd;
  beforeAll(async () => {
    wd = await startWatchdog([process.execPath, LAUNCHER, '--shape', shape, fixture(file)]);
  });
  afterAll(async () => {
    if (wd) expect((await wd.stop()).code).toBe(0);
  });

  if (shape === 'openfaas') {
    // The node20 template's handler: { body: JSON.stringify(event.body), content-type }.
    test('a JSON body is parsed into event.body; the result object is sent as JSON', async () => {
      const got = await send(wd, '/fn', { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"hello":"world"}' });
      expect([got.status, got.headers.get('content-type'), JSON.parse(got.body)])
        .toEqual([200, 'application/json', { body: '{"hello":"world"}', 'content-type': 'application/json' }]);
    });

    test('no Content-Type is text/plain, as the template makes it', async () => {
      const got = await send(wd, '/', { method: 'POST', body: new TextEncoder().encode('hi') }); // fetch adds no Content-Type
      expect(JSON.parse(got.body)).toMatchObject({ body: '"hi"' });
      const get = await send(wd, '/?x=1');
      expect(JSON.parse(get.body)).toEqual({ body: '""', 'content-type': 'text/plain' });
    });

    test('bad JSON is the client\'s: 400 bad_request (§13), the worker serves on', async () => {
      const got = await send(wd, '/', { method: 'POST', headers: { 'content-type': 'application/json', 'x-request-id': 'of-bad-json' }, body: '{"a":' });
      expect([got.status, got.headers.get('afterburn-error')]).toEqual([400, 'bad_request']);
      expect(JSON.parse(got.body)).toMatchObject({ type: 'bad_request', request_id: 'of-bad-json' });
      expect((await send(wd, '/')).status).toBe(200);
    });
  }

  if (shape === 'lambda') {
    // The function URL tutorial's product of two numbers, with the tutorial's own request.
    test('the tutorial\'s request gets the tutorial\'s answer', async () => {
      const got = await send(wd, '/', { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"num1": "10", "num2": "10"}' });
      expect([got.status, got.body]).toEqual([200, 'The product of 10 and 10 is 100']);
    });

    test('a handler that throws (no JSON body) is a 500 handler_error, logged, the worker serves on', async () => {
      const got = await send(wd, '/', { headers: { 'x-request-id': 'lambda-throws' } });
      expect([got.status, got.headers.get('afterburn-error')]).toEqual([500, 'handler_error']);
      await wd.waitLog(/\[lambda-throws\] afterburn: handler failed/);
      const again = await send(wd, '/', { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"num1": 6, "num2": 7}' });
      expect(again.body).toBe('The product of 6 and 7 is 42');
    });
  }

  if (shape === 'cloudevents') {
    // Knative's CloudEvents template answers every event with a CloudEvent of its own.
    test('a binary-mode event is answered with a binary-mode CloudEvent', async () => {
      const got = await send(wd, '/', {
        method: 'POST',
        headers: {
          'ce-specversion': '1.0', 'ce-id': 'evt-e2e', 'ce-source': '/test', 'ce-type': 'com.example.test',
          'content-type': 'application/json', 'x-request-id': 'ce-e2e',
        },
        body: '{"name":"tiger"}',
      });
      expect([got.status, got.headers.get('ce-type'), got.headers.get('ce-source'), got.headers.get('ce-specversion'), JSON.parse(got.body)])
        .toEqual([200, 'function.response', 'function', '1.0', { message: 'OK' }]);
      expect(got.headers.get('ce-id')).toMatch(/\S/);
      // context.log.info('event', event): a record of the request's, in the log.
      await wd.waitLog(/\[ce-e2e\] info event \{"id":"evt-e2e"/);
    });

    test('a structured-mode event is read as well', async () => {
      const got = await send(wd, '/', {
        method: 'POST',
        headers: { 'content-type': 'application/cloudevents+json' },
        body: JSON.stringify({ specversion: '1.0', id: 'e2', source: '/s', type: 't', data: { k: 1 } }),
      });
      expect([got.status, got.headers.get('ce-type')]).toEqual([200, 'function.response']);
    });

    test('a request that is no CloudEvent is a 400 bad_request', async () => {
      const got = await send(wd, '/', { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
      expect([got.status, got.headers.get('afterburn-error')]).toEqual([400, 'bad_request']);
    });
  }
});
