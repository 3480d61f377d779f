'use strict';

// Error paths of the core (PROTOCOL.md §3.4, §8, §9.4): handler exceptions and rejected
// promises, failures after the head, framing errors, oversized bodies, a closed response
// pipe, EOF. Each runs the whole core over memory.

const { runConnection } = require('./support/core');
const { context } = require('..');

const b = (s) => Buffer.from(s, 'latin1');
const get = (path, id) => `GET ${path} HTTP/1.1\r\nHost: fn\r\n${id ? `AfterBurn-Request-Id: ${id}\r\n` : ''}\r\n`;
const field = (r, name) => r.headers.find(([n]) => n === name)?.[1];
const json = (r) => JSON.parse(r.body.toString('utf8'));

function router(routes) {
  return (req, res) => {
    const route = routes[req.url];
    if (route) return route(req, res);
    res.end('ok');
    return undefined;
  };
}

describe('handler errors (§8.3)', () => {
  test.each([
    ['a synchronous throw', () => { throw new Error('secret-db-password'); }],
    ['a rejected promise', async () => { throw new Error('secret-db-password'); }],
  ])('%s is answered 500 handler_error, logged in one record, and serving goes on', async (_name, fail) => {
    const { code, responses, logs } = await runConnection({
      segments: [b(get('/fail', 'rid-1') + get('/ok', 'rid-2'))],
      handle: router({ '/fail': fail }),
    });
    expect(code).toBe(0);
    expect(responses).toHaveLength(2);
    const [err, ok] = responses;
    expect(err.status).toBe(500);
    expect(field(err, 'afterburn-error')).toBe('handler_error');
    expect(field(err, 'content-type')).toBe('application/json');
    expect(json(err)).toEqual({
      type: 'handler_error',
      message: 'the function failed while handling the request',
      request_id: 'rid-1',
    });
    expect(err.body.toString()).not.toContain('secret'); // §8.1: never the exception message
    const record = logs.find((l) => l.includes('secret-db-password'));
    expect(record.split('\n')[0]).toContain('[rid-1]'); // first line names the request id
    expect(record).toMatch(/at .*errors\.test\.js/); // with the stack, in the same record
    expect(ok.status).toBe(200);
    expect(ok.body.toString()).toBe('ok');
  });

  test('headers set before the throw do not leak into the error response', async () => {
    const { responses } = await runConnection({
      segments: [b(get('/fail'))],
      handle: router({ '/fail': (req, res) => { res.setHeader('X-Secret', '1'); throw new Error('x'); } }),
    });
    expect(field(responses[0], 'x-secret')).toBeUndefined();
  });

  test('a thrown non-Error value is still a handler_error', async () => {
    const { responses, logs } = await runConnection({
      segments: [b(get('/fail', 'rid-v'))],
      // eslint-disable-next-line no-throw-literal
      handle: router({ '/fail': () => { throw 'a string'; } }),
    });
    expect(responses[0].status).toBe(500);
    expect(logs.join('')).toContain('"a string"');
  });

  test('a failure after the head leaves the chunked body without its last chunk and stops non-zero', async () => {
    const { code, responses, rest } = await runConnection({
      segments: [b(get('/mid') + get('/never'))],
      handle: router({
        '/mid': async (req, res) => {
          res.writeHead(200);
          await new Promise((resolve) => res.write('partial', resolve));
          throw new Error('after head');
        },
      }),
    });
    expect(code).not.toBe(0);
    expect(responses).toHaveLength(1);
    expect(responses[0]).toMatchObject({ status: 200, chunked: true, complete: false });
    expect(responses[0].body.toString()).toBe('partial');
    expect(rest.length).toBe(0);
  });

  test('a handler that destroys its response stops the worker without completing it', async () => {
    const { code, responses } = await runConnection({
      segments: [b(get('/destroy'))],
      handle: router({ '/destroy': (req, res) => { res.writeHead(200); res.write('x'); res.destroy(); } }),
    });
    expect(code).not.toBe(0);
    expect(responses.every((r) => !r.complete)).toBe(true);
  });
});

describe('framing errors (§8.8)', () => {
  test('a malformed request is answered 400 bad_request and the worker stops non-zero', async () => {
    const { code, responses } = await runConnection({
      segments: [b('GET / HTTP/1.1\r\nHost: fn\r\nContent-Length: 1, 1\r\n\r\n')],
      handle: router({}),
    });
    expect(code).not.toBe(0);
    expect(responses[0].status).toBe(400);
    expect(json(responses[0]).type).toBe('bad_request');
  });

  test('a body error names the request id of the request it broke', async () => {
    const { responses } = await runConnection({
      segments: [b('POST / HTTP/1.1\r\nHost: fn\r\nAfterBurn-Request-Id: rid-body\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n')],
      handle: (req, res) => req.resume().on('end', () => res.end('never')),
    });
    expect(json(responses[0])).toMatchObject({ type: 'bad_request', request_id: 'rid-body' });
  });

  test('an oversized Content-Length is answered 413 before any body byte', async () => {
    let called = false;
    const { code, responses } = await runConnection({
      segments: [b('POST / HTTP/1.1\r\nHost: fn\r\nContent-Length: 11\r\n\r\n')],
      env: { AFTERBURN_MAX_BODY_BYTES: '10' },
      eof: false,
      handle: () => { called = true; },
    });
    expect(called).toBe(false);
    expect(code).not.toBe(0);
    expect(responses[0].status).toBe(413);
    expect(json(responses[0]).type).toBe('body_too_large');
  });

  test('a chunked body that never ends is answered 413 once it crosses the limit', async () => {
    const { responses } = await runConnection({
      segments: [b('POST / HTTP/1.1\r\nHost: fn\r\nTransfer-Encoding: chunked\r\n\r\n'), b('4\r\nabcd\r\n'.repeat(10))],
      perSegment: true,
      eof: false,
      env: { AFTERBURN_MAX_BODY_BYTES: '16' },
      handle: (req, res) => req.resume().on('end', () => res.end('never')),
    });
    expect(responses[0].status).toBe(413);
  });

  test('EOF inside a request is a 400 and a non-zero stop; EOF between requests a clean 0', async () => {
    const inside = await runConnection({ segments: [b('GET / HTTP/1.1\r\nHost:')], handle: router({}) });
    expect(inside.code).not.toBe(0);
    expect(inside.responses[0].status).toBe(400);
    const between = await runConnection({ segments: [b(get('/'))], handle: router({}) });
    expect(between.code).toBe(0);
    expect(between.responses.map((r) => r.status)).toEqual([200]);
  });

  test('a response pipe that is closed stops the worker non-zero', async () => {
    const { code, logs } = await runConnection({
      segments: [b(get('/'))],
      handle: router({}),
      write: () => {
        const err = new Error('EPIPE: broken pipe, write');
        err.code = 'EPIPE';
        throw err;
      },
    });
    expect(code).not.toBe(0);
    expect(logs.join('')).toContain('broken pipe');
  });
});

describe('handshake (§3)', () => {
  const handshake = (versions) =>
    b(`OPTIONS * HTTP/1.1\r\nHost: afterburn\r\nAfterBurn-Handshake: ${versions}\r\nContent-Length: 0\r\n\r\n`);

  test('is answered by the library and never reaches the handler', async () => {
    const seen = [];
    const { code, responses } = await runConnection({
      segments: [handshake('1'), b(get('/after'))],
      handle: (req, res) => { seen.push(req.url); res.end(); },
    });
    expect(code).toBe(0);
    expect(seen).toEqual(['/after']);
    expect(responses[0].status).toBe(200);
    expect(field(responses[0], 'afterburn-protocol')).toBe('1');
    expect(field(responses[0], 'afterburn-library')).toMatch(/^node\//);
    expect(field(responses[0], 'content-length')).toBe('0');
  });

  test('a version mismatch is 400 version_mismatch listing the versions spoken, then a non-zero stop', async () => {
    const { code, responses } = await runConnection({ segments: [handshake('99')], handle: router({}) });
    expect(code).not.toBe(0);
    expect(responses[0].status).toBe(400);
    expect(json(responses[0]).type).toBe('version_mismatch');
    expect(field(responses[0], 'afterburn-protocol')).toBe('1');
  });
});

describe('bodies the handler leaves (§6.3)', () => {
  test.each([
    ['never reads', () => {}],
    ['pauses after the first chunk', (req) => req.once('data', () => req.pause())],
    ['breaks out of for await', async (req) => { for await (const _ of req) break; }], // eslint-disable-line no-unused-vars
    ['destroys the request', (req) => req.destroy()],
  ])('a handler that %s still gets the next request served', async (_name, reader) => {
    const body = 'x'.repeat(256 * 1024);
    const { code, responses } = await runConnection({
      segments: [b(`POST /partial HTTP/1.1\r\nHost: fn\r\nContent-Length: ${body.length}\r\n\r\n${body}`), b(get('/next'))],
      perSegment: true,
      handle: async (req, res) => {
        if (req.url === '/partial') await reader(req);
        res.end(req.url);
      },
    });
    expect(code).toBe(0);
    expect(responses.map((r) => r.body.toString())).toEqual(['/partial', '/next']);
  });
});

describe('metadata (§5)', () => {
  test('request id and deadline are exposed and their fields removed', async () => {
    let seen;
    await runConnection({
      segments: [b('GET / HTTP/1.1\r\nHost: fn\r\nAfterBurn-Request-Id: rid-m\r\nAfterBurn-Timeout-Ms: 60000\r\n\r\n')],
      handle: (req, res) => {
        const ctx = context(req);
        seen = { id: ctx.requestId, has: ctx.hasDeadline, left: ctx.timeRemaining(), raw: req.rawHeaders, headers: req.headers };
        res.end();
      },
    });
    expect(seen.id).toBe('rid-m');
    expect(seen.has).toBe(true);
    expect(seen.left).toBeGreaterThan(50000);
    expect(seen.left).toBeLessThanOrEqual(60000);
    expect(seen.raw).toEqual(['Host', 'fn']);
    expect(Object.keys(seen.headers)).toEqual(['host']);
  });

  test('without a deadline there is none; without an id one is made', async () => {
    let ctx;
    await runConnection({ segments: [b(get('/'))], handle: (req, res) => { ctx = context(req); res.end(); } });
    expect(ctx.hasDeadline).toBe(false);
    expect(ctx.timeRemaining()).toBe(Infinity);
    expect(ctx.requestId).toMatch(/^[0-9a-f]{32}$/);
  });

  test('the signal aborts at the deadline, and remaining time is never negative', async () => {
    let reason;
    let left;
    await runConnection({
      segments: [b('GET / HTTP/1.1\r\nHost: fn\r\nAfterBurn-Timeout-Ms: 0\r\n\r\n')],
      handle: async (req, res) => {
        const ctx = context(req);
        if (!ctx.signal.aborted) await new Promise((resolve) => ctx.signal.addEventListener('abort', resolve));
        reason = ctx.signal.reason;
        left = ctx.timeRemaining();
        res.end();
      },
    });
    expect(reason.name).toBe('TimeoutError');
    expect(left).toBe(0);
  });

  test('a deadline past setTimeout\'s range does not abort early (§5.2)', async () => {
    // 5e9 ms is past 2^31-1, which setTimeout would turn into 1 ms.
    let aborted;
    let left;
    await runConnection({
      segments: [b('GET / HTTP/1.1\r\nHost: fn\r\nAfterBurn-Timeout-Ms: 5000000000\r\n\r\n')],
      handle: async (req, res) => {
        const ctx = context(req);
        const { signal } = ctx;
        await new Promise((resolve) => setTimeout(resolve, 20));
        aborted = signal.aborted;
        left = ctx.timeRemaining();
        res.end();
      },
    });
    expect(aborted).toBe(false);
    expect(left).toBeGreaterThan(4.9e9);
  });

  test('a timeout of thousands of digits is the capped deadline, not Infinity (§5.2)', async () => {
    let left;
    await runConnection({
      segments: [b(`GET / HTTP/1.1\r\nHost: fn\r\nAfterBurn-Timeout-Ms: ${'9'.repeat(400)}\r\n\r\n`)],
      handle: (req, res) => {
        left = context(req).timeRemaining();
        res.end();
      },
    });
    expect(left).toBeLessThanOrEqual(9223372036854);
    expect(left).toBeGreaterThan(9223372000000);
  });

  test('a far deadline\'s timer is re-armed in steps and fires 50 ms after the deadline', () => {
    jest.useFakeTimers();
    try {
      const { RequestContext } = require('../lib/context');
      const ctx = new RequestContext('id', 2 ** 31 + 5000, performance.now());
      const { signal } = ctx;
      jest.advanceTimersByTime(2 ** 31 - 1);
      expect(signal.aborted).toBe(false);
      jest.advanceTimersByTime(4000);
      expect(signal.aborted).toBe(false);
      jest.advanceTimersByTime(1001);
      expect(signal.aborted).toBe(false); // at the deadline; the library's own fires 50 ms later
      jest.advanceTimersByTime(50);
      expect(signal.aborted).toBe(true);
      expect(signal.reason.name).toBe('TimeoutError');
    } finally {
      jest.useRealTimers();
    }
  });
});

describe('responses (§4.4)', () => {
  test('no 1xx reaches the pipe, and no Date field', async () => {
    const { responses, output } = await runConnection({
      segments: [b(get('/hints'))],
      handle: (req, res) => {
        res.writeContinue();
        res.writeEarlyHints({ link: '</style.css>; rel=preload' });
        res.end('final');
      },
    });
    expect(output.toString('latin1')).not.toMatch(/HTTP\/1\.1 1\d\d/);
    expect(responses.map((r) => r.status)).toEqual([200]);
    expect(field(responses[0], 'date')).toBeUndefined();
  });

  test('a throw after the response ended is logged and changes nothing', async () => {
    const { code, responses, logs } = await runConnection({
      segments: [b(get('/late') + get('/next'))],
      handle: router({ '/late': (req, res) => { res.end('done'); throw new Error('late'); } }),
    });
    expect(code).toBe(0);
    expect(responses.map((r) => [r.status, r.body.toString()])).toEqual([[200, 'done'], [200, 'ok']]);
    expect(logs.join('')).toContain('late');
  });
});
