'use strict';

// The worker on one lane, started as the watchdog starts one (test/support/lanes.js plays the
// watchdog on named pipes): the conformance fixture's /trailers route (contract A), the
// library's own cancellation 50 ms after the deadline (contract B), and ctx.log's JSON lines
// under AFTERBURN_LOG_FORMAT=json (contract C), in both handler styles.

const { startLanes, get, HANDSHAKE } = require('./support/lanes');

const field = (r, name) => r.headers.find(([n]) => n === name)?.[1];
const json = (r) => JSON.parse(r.body.toString('utf8'));
const FIXTURE = ['test/fixture/fixture.js'];

let worker = null;
afterEach(() => {
  if (worker !== null) worker.kill();
  worker = null;
});

async function withWorker(args, options, fn) {
  worker = startLanes(args, { lanes: 1, ...options });
  const w = worker;
  try {
    w.lane(1).send(HANDSHAKE);
    await w.lane(1).responses(1);
    await fn(w);
    expect(await w.endAll()).toEqual({ code: 0, signal: null });
  } catch (err) {
    err.message += `\nworker stderr:\n${w.stderr()}`;
    throw err;
  }
}

test('the fixture\'s /trailers: the request body and trailers back as JSON, chunked, with X-Fixture-Trailer: done', async () => {
  await withWorker(FIXTURE, {}, async (w) => {
    w.lane(1).send('POST /trailers HTTP/1.1\r\nHost: fn\r\nTransfer-Encoding: chunked\r\nTrailer: X-A\r\n\r\n' +
      '3\r\nabc\r\n0\r\nX-A: 1\r\nx-a: 2\r\nX-B: b\r\n\r\n');
    const [, r] = await w.lane(1).responses(2);
    expect([r.status, r.chunked, field(r, 'trailer')]).toEqual([200, true, 'X-Fixture-Trailer']);
    expect(json(r)).toEqual({ body: 'abc', trailers: { 'x-a': '1, 2', 'x-b': 'b' } });
    expect(r.trailers).toEqual([['x-fixture-trailer', 'done']]);
  });
});

test('one lane: the deadline aborts ctx.signal 50 ms after it, and /wait-cancel logs it (contract B)', async () => {
  await withWorker(FIXTURE, {}, async (w) => {
    const sent = performance.now();
    w.lane(1).send(get('/wait-cancel?ms=20000', { id: 'one-lane', timeoutMs: 100 }));
    const [, r] = await w.lane(1).responses(2);
    expect(performance.now() - sent).toBeGreaterThanOrEqual(150);
    expect(json(r)).toEqual({ cancelled: true });
  });
  expect(worker.stderr()).toBe('cancelled one-lane\n');
});

describe.each([
  ['listener (the fixture)', FIXTURE],
  ['fetch', ['test/apps/lanes-app.js', 'fetch']],
  ['fetch on the public http core', ['test/apps/lanes-app.js', 'fetch-public']],
])('ctx.log, %s', (_style, args) => {
  test('AFTERBURN_LOG_FORMAT=json: one JSON object per call, {"request_id", "msg"} (contract C)', async () => {
    await withWorker(args, { env: { AFTERBURN_LOG_FORMAT: 'json' } }, async (w) => {
      w.lane(1).send(get(`/log?text=${encodeURIComponent('two\nlines "quoted"')}`, { id: 'rid-json' }));
      await w.lane(1).responses(2);
    });
    expect(worker.stderr()).toBe('{"request_id":"rid-json","msg":"two\\nlines \\"quoted\\""}\n');
  });

  test.each([['text'], [undefined]])('AFTERBURN_LOG_FORMAT=%s: "[request id] text" lines', async (format) => {
    await withWorker(args, { env: format === undefined ? {} : { AFTERBURN_LOG_FORMAT: format } }, async (w) => {
      w.lane(1).send(get('/log?text=two%0Alines', { id: 'rid-text' }));
      await w.lane(1).responses(2);
    });
    expect(worker.stderr()).toBe('[rid-text] two\n[rid-text] lines\n');
  });
});
