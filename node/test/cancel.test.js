'use strict';

// The pure parts of lanes (PROTOCOL.md §2.5): the cancel pipe's lines (lib/cancel.js), the
// exchanges in flight by token, a context's cancellation and logger (lib/context.js), and
// the lane variables (lib/config.js). The pipes themselves are lanes.test.js's.

const { CancelLines, InFlight } = require('../lib/cancel');
const { RequestContext } = require('../lib/context');
const { streamsFromEnv, preferredLanesFromEnv } = require('../lib/config');
const { runConnection } = require('./support/core');
const { Connection } = require('../lib/connection');
const { FetchConnection } = require('../lib/fetch-connection');
const { limitsFromEnv } = require('../lib/config');
const { Response } = require('..');

const b = (s) => Buffer.from(s, 'latin1');

describe('CancelLines', () => {
  test.each([
    ['one line', ['cancel abc\n'], ['abc']],
    ['two lines in one write', ['cancel a1\ncancel B2\n'], ['a1', 'B2']],
    ['a line across writes', ['can', 'cel x', 'y\n'], ['xy']],
    ['no newline yet', ['cancel abc'], []],
    ['other lines', ['hello\ncancel\ncancel \ncancel a b\nCANCEL abc\ncancel ok\n'], ['ok']],
    ['a token out of the alphabet', ['cancel ab-c\ncancel ab_c\n'], []],
    ['a CR before the LF', ['cancel abc\r\n'], []],
    ['a 64-character token', [`cancel ${'t'.repeat(64)}\n`], ['t'.repeat(64)]],
    ['a 65-character token', [`cancel ${'t'.repeat(65)}\n`], []],
    ['a very long line, then a good one', ['x'.repeat(5000), 'y'.repeat(5000), '\ncancel ok\n'], ['ok']],
  ])('%s', (_name, writes, tokens) => {
    const lines = new CancelLines();
    const got = [];
    for (const w of writes) got.push(...lines.push(b(w)));
    expect(got).toEqual(tokens);
  });
});

describe('InFlight and RequestContext cancellation', () => {
  test('cancel aborts the signal with an AbortError, made before or after the signal was asked for', () => {
    const inFlight = new InFlight();
    const early = new RequestContext('r1', -1, performance.now());
    const late = new RequestContext('r2', -1, performance.now());
    inFlight.add('t1', early);
    inFlight.add('t2', late);
    const signal = early.signal;
    expect(inFlight.cancel('t1')).toBe(true);
    expect(inFlight.cancel('t2')).toBe(true);
    expect([signal.aborted, signal.reason.name]).toEqual([true, 'AbortError']);
    expect([late.signal.aborted, late.signal.reason.name]).toEqual([true, 'AbortError']);
  });

  test('an unknown token cancels nothing', () => {
    const inFlight = new InFlight();
    const ctx = new RequestContext('r', -1, performance.now());
    inFlight.add('t', ctx);
    expect(inFlight.cancel('other')).toBe(false);
    expect(ctx.signal.aborted).toBe(false);
  });

  test('a cancel line read before its exchange\'s head cancels the exchange when it starts', () => {
    const inFlight = new InFlight();
    expect(inFlight.cancel('early')).toBe(false);
    const other = new RequestContext('o', -1, performance.now());
    inFlight.add('other', other);
    const ctx = new RequestContext('r', -1, performance.now());
    inFlight.add('early', ctx);
    expect([ctx.signal.aborted, ctx.signal.reason.name, other.signal.aborted]).toEqual([true, 'AbortError', false]);
    expect(inFlight.unknown.size).toBe(0);
  });

  test('unknown tokens are remembered up to a bound, oldest forgotten first', () => {
    const inFlight = new InFlight();
    for (let i = 0; i < 1100; i++) inFlight.cancel(`u${i}`);
    expect(inFlight.unknown.size).toBe(1024);
    expect(inFlight.unknown.has('u0')).toBe(false);
    expect(inFlight.unknown.has('u1099')).toBe(true);
  });

  test('an exchange that ended is forgotten: its token cancels nothing', () => {
    const inFlight = new InFlight();
    const ctx = new RequestContext('r', -1, performance.now());
    inFlight.add('t', ctx);
    ctx._end();
    expect(inFlight.size).toBe(0);
    expect(inFlight.cancel('t')).toBe(false);
    expect(ctx.signal.reason.name).not.toBe('AbortError');
  });

  test('a cancellation stops the deadline timer and keeps its own reason', () => {
    const ctx = new RequestContext('r', 60000, performance.now());
    const signal = ctx.signal;
    ctx._cancel();
    expect(signal.reason.name).toBe('AbortError');
    ctx._end();
    expect(signal.reason.name).toBe('AbortError');
  });
});

describe('the library\'s own cancellation at the deadline (§2.5, §8.6)', () => {
  afterEach(() => jest.useRealTimers());

  test.each([[0], [100], [5000]])('with AfterBurn-Timeout-Ms %i, ctx.signal aborts 50 ms after the deadline, not at it', (timeoutMs) => {
    jest.useFakeTimers();
    const ctx = new RequestContext('r', timeoutMs, performance.now());
    const { signal } = ctx;
    jest.advanceTimersByTime(timeoutMs);
    expect(ctx.timeRemaining()).toBe(0);
    jest.advanceTimersByTime(49);
    expect(signal.aborted).toBe(false);
    jest.advanceTimersByTime(1);
    expect([signal.aborted, signal.reason.name]).toEqual([true, 'TimeoutError']);
  });

  test('a signal first asked for after the deadline still waits out the 50 ms', () => {
    jest.useFakeTimers();
    const ctx = new RequestContext('r', 10, performance.now());
    jest.advanceTimersByTime(30);
    const { signal } = ctx;
    jest.advanceTimersByTime(29);
    expect(signal.aborted).toBe(false);
    jest.advanceTimersByTime(1);
    expect(signal.aborted).toBe(true);
  });
});

describe('RequestContext.log', () => {
  test.each([
    [['plain'], '[rid] plain\n'],
    [['%s=%d', 'n', 4], '[rid] n=4\n'],
    [['two\nlines'], '[rid] two\n[rid] lines\n'],
    [[{ a: 1 }], '[rid] { a: 1 }\n'],
  ])('log(...%j) is one record, every line tagged', (args, want) => {
    const records = [];
    const ctx = new RequestContext('rid', -1, performance.now(), (text) => records.push(text));
    ctx.log(...args);
    expect(records).toEqual([want]);
  });
});

describe('streamsFromEnv (§2.5)', () => {
  test.each([
    [{}, { lanes: [], cancel: null, offered: false }],
    [{ AFTERBURN_STREAM_FDS: '', AFTERBURN_STREAM_CANCEL_FD: '' }, { lanes: [], cancel: null, offered: false }],
    [{ AFTERBURN_STREAM_FDS: '5,6', AFTERBURN_STREAM_CANCEL_FD: '7' }, { lanes: [[5, 6]], cancel: 7, offered: false }],
    [{ AFTERBURN_STREAM_FDS: '5,6,7,8', AFTERBURN_STREAM_CANCEL_FD: '9' }, { lanes: [[5, 6], [7, 8]], cancel: 9, offered: false }],
    // lanes=auto's offer (§2.5)
    [{ AFTERBURN_STREAM_OFFER_FDS: '5,6,7,8', AFTERBURN_STREAM_OFFER_CANCEL_FD: '9' }, { lanes: [[5, 6], [7, 8]], cancel: 9, offered: true }],
  ])('%j', (env, want) => {
    expect(streamsFromEnv(env)).toEqual(want);
  });

  test.each([
    { AFTERBURN_STREAM_FDS: '5' },
    { AFTERBURN_STREAM_FDS: '5,6,7' },
    { AFTERBURN_STREAM_FDS: '5,,6' },
    { AFTERBURN_STREAM_FDS: '5,6,' },
    { AFTERBURN_STREAM_FDS: '+5,6' },
    { AFTERBURN_STREAM_FDS: '5,6', AFTERBURN_STREAM_CANCEL_FD: '6' },
    { AFTERBURN_STREAM_FDS: '0,6' },
    { AFTERBURN_STREAM_CANCEL_FD: 'x' },
    { AFTERBURN_STREAM_CANCEL_FD: '2' },
    { AFTERBURN_STREAM_OFFER_FDS: '5,6,7' },
    { AFTERBURN_STREAM_OFFER_FDS: '5,6', AFTERBURN_STREAM_OFFER_CANCEL_FD: '5' },
  ])('refuses %j', (env) => {
    expect(() => streamsFromEnv(env)).toThrow(/^afterburn: bad AFTERBURN_STREAM_/);
  });

  test.each([['1', 1], ['8', 8], ['', null]])('AFTERBURN_NODE_PREFERRED_LANES=%j is %p', (raw, want) => {
    expect(preferredLanesFromEnv({ AFTERBURN_NODE_PREFERRED_LANES: raw })).toBe(want);
  });

  test.each(['0', 'x', '-1', '1.5'])('refuses AFTERBURN_NODE_PREFERRED_LANES=%j', (raw) => {
    expect(() => preferredLanesFromEnv({ AFTERBURN_NODE_PREFERRED_LANES: raw })).toThrow(/^afterburn: bad AFTERBURN_NODE_PREFERRED_LANES/);
  });
});

// Both cores put each exchange with a token in InFlight while it runs, and take it out
// when its response is complete; a handshake (whose token is no exchange's) is never in it.
describe.each([
  ['listener', Connection, (req, res, ctx) => ctx.signal.addEventListener('abort', () => res.end(ctx.signal.reason.name))],
  ['fetch', FetchConnection, (request, ctx) => new Promise((resolve) => {
    ctx.signal.addEventListener('abort', () => resolve(new Response(ctx.signal.reason.name)));
  })],
])('the %s core and InFlight', (_style, Core, handle) => {
  test('a cancelled exchange answers; its token is forgotten once its response is complete', async () => {
    const inFlight = new InFlight();
    const out = [];
    let conn;
    const done = new Promise((resolve) => {
      conn = new Core({
        limits: limitsFromEnv({}),
        handle,
        log: () => {},
        sink: { write: (c) => out.push(Buffer.from(c)), end: resolve },
        inFlight,
      });
    });
    conn.push(b('GET /a HTTP/1.1\r\nHost: fn\r\nAfterBurn-Exchange: tokA\r\n\r\n'));
    await new Promise((resolve) => setImmediate(resolve));
    expect([...inFlight.byToken.keys()]).toEqual(['tokA']);
    inFlight.cancel('tokA');
    await new Promise((resolve) => setImmediate(resolve));
    expect(inFlight.size).toBe(0);
    conn.end();
    expect(await done).toBe(0);
    const text = Buffer.concat(out).toString('latin1');
    expect(text).toMatch(/^HTTP\/1\.1 200 OK\r\n/);
    expect(text).toMatch(/\r\nafterburn-exchange: tokA\r\n/i);
    expect(text).toMatch(/AbortError$/);
  });
});

test('the in-memory cores still take a sink without drained or onDrain (one lane)', async () => {
  const { code, responses } = await runConnection({
    segments: [b('GET /x HTTP/1.1\r\nHost: fn\r\n\r\n')],
    handle: (req, res) => res.end('ok'),
  });
  expect([code, responses[0].body.toString()]).toEqual([0, 'ok']);
});
