'use strict';

// The FrameGuard alone: the §4.3 checks llhttp does not make, as bytes arrive.

const { FrameGuard } = require('../lib/guard');
const { Framer } = require('../lib/framer');
const { plainView } = require('./support/core');

const b = (s) => Buffer.from(s, 'latin1');
const guard = (maxHead = 1024, maxBody = 0) => new FrameGuard({ maxHead, maxBody });

describe('FrameGuard', () => {
  test('passes whole well-formed requests and counts their heads', () => {
    const g = guard();
    const bytes = b('GET /a HTTP/1.1\r\nHost: fn\r\n\r\nPOST /b HTTP/1.1\r\nHost: fn\r\nContent-Length: 3\r\n\r\nabc');
    expect(g.write(bytes)).toEqual({ pass: bytes.length, error: null });
    expect(g.messages).toBe(2);
    expect(g.atBoundary).toBe(true);
  });

  test('follows a chunked body with extensions and trailers to the next request', () => {
    const g = guard();
    const bytes = b('POST / HTTP/1.1\r\nHost: fn\r\nTransfer-Encoding: chunked\r\n\r\n' +
      '3;x="y"\r\nabc\r\n0\r\nX-T: 1\r\n\r\nGET / HTTP/1.1\r\nHost: fn\r\n\r\n');
    expect(g.write(bytes).error).toBeNull();
    expect(g.messages).toBe(2);
    expect(g.atBoundary).toBe(true);
  });

  test('rule 11: a head of exactly the limit (empty line not counted) passes, one byte more is 431', () => {
    const line = 'GET / HTTP/1.1\r\nHost: fn\r\n';
    const pad = (n) => `X: ${'p'.repeat(n - 5)}\r\n`;
    const limit = 100;
    const exact = b(line + pad(limit - line.length) + '\r\n');
    expect(guard(limit).write(exact).error).toBeNull();
    const over = b(line + pad(limit - line.length + 1) + '\r\n');
    const r = guard(limit).write(over);
    expect(r.error).toMatchObject({ status: 431, type: 'headers_too_large' });
  });

  test('rule 11: a line without its end is refused once it cannot fit, without waiting for it', () => {
    const g = guard(64);
    expect(g.write(b('GET / HTTP/1.1\r\nX: ')).error).toBeNull();
    const r = g.write(b('y'.repeat(100)));
    expect(r.error).toMatchObject({ status: 431 });
  });

  test('a refused line never reaches the parser with its line feed', () => {
    const bytes = b('GET  / HTTP/1.1\r\nHost: fn\r\n\r\n');
    const r = guard().write(bytes);
    expect(r.error).toMatchObject({ status: 400, type: 'bad_request' });
    expect(bytes.subarray(0, r.pass).includes(0x0a)).toBe(false);
  });

  test('rule 12: a chunked body is refused at the chunk that crosses the limit', () => {
    const g = guard(1024, 10);
    const head = 'POST / HTTP/1.1\r\nHost: fn\r\nTransfer-Encoding: chunked\r\n\r\n';
    expect(g.write(b(`${head}8\r\n01234567\r\n`)).error).toBeNull();
    expect(g.write(b('8\r\n')).error).toMatchObject({ status: 413, type: 'body_too_large' });
  });

  test('rule 12: a Content-Length over the limit is refused at the end of the head', () => {
    expect(guard(1024, 10).write(b('POST / HTTP/1.1\r\nHost: fn\r\nContent-Length: 11\r\n\r\n')).error)
      .toMatchObject({ status: 413 });
  });

  test('rule 8: a coding list is 501', () => {
    expect(guard().write(b('POST / HTTP/1.1\r\nHost: fn\r\nTransfer-Encoding: gzip, chunked\r\n\r\n')).error)
      .toMatchObject({ status: 501, type: 'not_implemented' });
  });

  test('after an error everything is refused', () => {
    const g = guard();
    g.write(b('GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n'));
    expect(g.write(b('GET / HTTP/1.1\r\n'))).toMatchObject({ pass: 0, error: { status: 400 } });
  });

  // (With the Framer's marks too (framer.js), which come from what the guard finds.)
  test('reads plain Uint8Arrays (lib/child.js passes views of its read buffer) as it reads Buffers', () => {
    const view = (text) => plainView(b(text));
    const streams = [
      'POST / HTTP/1.1\r\nHost: fn\r\nTransfer-Encoding: chunked\r\n\r\n3;x=y\r\nabc\r\nA\r\n0123456789\r\n0\r\nX-T: 1\r\n\r\n' +
        'OPTIONS * HTTP/1.1\r\nHost: fn\r\n\r\nGET http://fn/x HTTP/1.1\r\nHost: fn\r\nContent-Length: 2\r\n\r\nab',
      'POST / HTTP/1.1\r\nHost: fn\r\nContent-Length: 1x\r\n\r\n',
      'POST / HTTP/1.1\r\nHost: fn\r\nTransfer-Encoding: gzip\r\n\r\n',
      'GET / HTTP/1.1\r\nHost: fn\r\nAfterBurn-Timeout-Ms: 12a\r\n\r\n',
      'POST / HTTP/1.1\r\nHost: fn\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n',
      'GET * HTTP/1.1\r\nHost: fn\r\n\r\n',
    ];
    const framer = () => new Framer({ maxHead: 1024, maxBody: 0 });
    for (const text of streams) {
      const marksOfBuffer = [];
      const marksOfView = [];
      const fromBuffer = guard().write(b(text));
      const fromView = guard().write(view(text));
      expect(fromView).toEqual(fromBuffer);
      expect(fromView.error && fromView.error.message).toEqual(fromBuffer.error && fromBuffer.error.message);
      expect(framer().write(view(text), marksOfView)).toEqual(framer().write(b(text), marksOfBuffer));
      expect(marksOfView).toEqual(marksOfBuffer);
    }
    expect(guard().write(view(streams[0])).error).toBeNull();
    expect(guard().write(view(streams[1])).error.message).toContain('"1x"');
    expect(guard().write(view(streams[4])).error.message).toContain('"zz"');
  });

  test('rule 2: each part of the request line is looked for within the line, not past its end', () => {
    const cases = [
      ['GET\r\nHost: a b c\r\n\r\n', 'three single-space-separated parts'],
      ['GET /x\r\nHost: a b\r\n\r\n', 'three single-space-separated parts'],
      ['GET / HTTP/1.1 \r\nHost: fn\r\n\r\n', 'three single-space-separated parts'],
      ['GET / HTTX/1.1\r\nHost: fn\r\n\r\n', 'a version other than HTTP/1.1'],
      ['GET / HTTP/1.2\r\nHost: fn\r\n\r\n', 'a version other than HTTP/1.1'],
      ['GET / HTTP/1.10\r\nHost: fn\r\n\r\n', 'a version other than HTTP/1.1'],
      ['GET / http/1.1\r\nHost: fn\r\n\r\n', 'a version other than HTTP/1.1'],
      ['GET / HTTP/1x1\r\nHost: fn\r\n\r\n', 'a version other than HTTP/1.1'],
      ['GET / XTTP/1.1\r\nHost: fn\r\n\r\n', 'a version other than HTTP/1.1'],
      ['GET / HTTP/1.0\r\nHost: fn\r\n\r\n', null],
      ['GET /a:b HTTP/1.1\r\nHost: fn\r\n\r\n', null],
    ];
    for (const [text, problem] of cases) {
      const { error } = guard().write(b(text));
      if (problem === null) expect(error).toBeNull();
      else expect(error && error.message).toContain(problem);
    }
  });

  test('rules 1 and 3: a CR or colon is looked for within its own line', () => {
    expect(guard().write(b('GET / HTTP/1.1\r\nHost: fn\r\nX-Nocolon\r\nY: 1\r\n\r\n')).error.message).toContain('without a name or colon');
    expect(guard().write(b('GET / HTTP/1.1\r\nHost: f\rn\r\n\r\n')).error.message).toContain('bare CR');
    expect(guard().write(b('GET / HTTP/1.1\r\n\rHost: fn\r\n\r\n')).error.message).toContain('bare CR');
    expect(guard().write(b('\rGET / HTTP/1.1\r\nHost: fn\r\n\r\n')).error.message).toContain('bare CR');
    expect(guard().write(b('GET / HTTP/1.1\r\nHost: fn\r\nX: 1\r\n\r\n')).error).toBeNull();
  });

  test('rule 14: one AfterBurn-Exchange of 1 to 64 characters of 0-9 a-z A-Z, in any case of its name', () => {
    const head = (fields) => b(`GET / HTTP/1.1\r\nHost: fn\r\n${fields}\r\n`);
    const ok = ['AfterBurn-Exchange: a', 'afterburn-exchange: Zz09', `AFTERBURN-EXCHANGE:\t${'x'.repeat(64)} `];
    for (const field of ok) expect(guard().write(head(`${field}\r\n`)).error).toBeNull();
    const bad = [
      ['AfterBurn-Exchange: \r\n', '""'],
      [`AfterBurn-Exchange: ${'x'.repeat(65)}\r\n`, 'xxx'],
      ['AfterBurn-Exchange: a-b\r\n', '"a-b"'],
      ['AfterBurn-Exchange: a b\r\n', '"a b"'],
      ['AfterBurn-Exchange: \u00e9\r\n', 'AfterBurn-Exchange'],
      ['AfterBurn-Exchange: a\r\nafterburn-exchange: a\r\n', 'more than one AfterBurn-Exchange'],
    ];
    for (const [fields, detail] of bad) {
      const { error } = guard().write(head(fields));
      expect(error).toMatchObject({ status: 400, type: 'bad_request' });
      expect(error.message).toContain(detail);
      expect(error.exchange).toBeNull(); // found inside the head: no token to echo
    }
    // One per request: the next request may carry its own.
    const g = guard();
    expect(g.write(b('GET / HTTP/1.1\r\nHost: fn\r\nAfterBurn-Exchange: a1\r\n\r\nGET / HTTP/1.1\r\nHost: fn\r\nAfterBurn-Exchange: a2\r\n\r\n')).error).toBeNull();
    expect(g.messages).toBe(2);
  });

  test('§4.6: an error at the end of a head carries its token, read only then or when a write ends inside that head', () => {
    const withToken = 'POST / HTTP/1.1\r\nHost: fn\r\nAfterBurn-Exchange: t0K\r\n';
    // A head read whole in one write makes no string of its token: the core has llhttp's.
    const g = guard(1024, 10);
    expect(g.write(b(`${withToken}Content-Length: 3\r\n\r\nabc`)).error).toBeNull();
    expect(g.token).toBeNull();
    // Rule 12 at the end of the head, in one write, and with the token in an earlier write
    // whose bytes are then overwritten (lib/child.js reuses its read buffer).
    expect(guard(1024, 10).write(b(`${withToken}Content-Length: 11\r\n\r\n`)).error).toMatchObject({ status: 413, exchange: 't0K' });
    const h = guard(1024, 10);
    const first = b(withToken);
    expect(h.write(first).error).toBeNull();
    first.fill(0x41);
    expect(h.write(b('Content-Length: 11\r\n\r\n')).error).toMatchObject({ status: 413, exchange: 't0K' });
    // Rule 10 at the end of the head; and a head without a token has none to carry.
    expect(guard().write(b('GET / HTTP/1.1\r\nAfterBurn-Exchange: t1\r\n\r\n')).error).toMatchObject({ status: 400, exchange: 't1' });
    expect(guard().write(b('GET / HTTP/1.1\r\nX: 1\r\n\r\n')).error).toMatchObject({ status: 400, exchange: null });
    // The token of one request is not the next one's.
    const k = guard(1024, 10);
    expect(k.write(b(`${withToken}Content-Length: 1\r\n\r\na`)).error).toBeNull();
    expect(k.write(b('POST / HTTP/1.1\r\nHost: fn\r\nContent-Length: 11\r\n\r\n')).error).toMatchObject({ status: 413, exchange: null });
  });

  test('§9.4: EOF between requests is clean, inside one it is an error', () => {
    const g = guard();
    g.write(b('GET / HTTP/1.1\r\nHost: fn\r\n\r\n'));
    expect(g.end()).toBeNull();
    const h = guard();
    h.write(b('POST / HTTP/1.1\r\nHost: fn\r\nContent-Length: 5\r\n\r\nab'));
    expect(h.end()).toMatchObject({ status: 400, type: 'bad_request' });
  });
});
