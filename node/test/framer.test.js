'use strict';

// The Framer alone: the fetch core's marks, made from what the FrameGuard finds as it checks.

const { Framer, MARK_BODY, MARK_END } = require('../lib/framer');
const { FrameGuard } = require('../lib/guard');
const { plainView } = require('./support/core');

const b = (s) => Buffer.from(s, 'latin1');
const framer = (maxHead = 1024, maxBody = 0) => new Framer({ maxHead, maxBody });

describe('Framer', () => {
  test('marks heads, Content-Length bodies and message ends, across writes', () => {
    const g = framer();
    const head = 'POST /b HTTP/1.1\r\nHost: fn\r\nContent-Length: 5\r\n\r\n';
    const get = 'GET /a HTTP/1.1\r\nHost: fn\r\n\r\n';
    const marks = [];
    const first = b(`${get}${head}ab`);
    expect(g.write(first, marks).error).toBeNull();
    expect(marks).toEqual([get.length, MARK_END, get.length + head.length, 0, first.length, MARK_BODY]);
    marks.length = 0;
    const second = b(`cde${get}GE`);
    expect(g.write(second, marks).error).toBeNull();
    expect(marks).toEqual([3, MARK_BODY | MARK_END, 3 + get.length, MARK_END, second.length, 0]);
    marks.length = 0;
    const chunked = b('T / HTTP/1.1\r\nHost: fn\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nx\r\n0\r\n\r\n');
    expect(g.write(chunked, marks).error).toBeNull();
    expect(marks).toEqual([chunked.length, MARK_END]); // a chunked body is llhttp's to read
    marks.length = 0;
    const bad = b('GET  / HTTP/1.1\r\n');
    const r = g.write(bad, marks);
    expect(marks).toEqual([r.pass, 0]);
  });

  test('marks plain Uint8Arrays (lib/child.js passes views of its read buffer) as it marks Buffers', () => {
    const streams = [
      'POST / HTTP/1.1\r\nHost: fn\r\nTransfer-Encoding: chunked\r\n\r\n3;x=y\r\nabc\r\nA\r\n0123456789\r\n0\r\nX-T: 1\r\n\r\n' +
        'OPTIONS * HTTP/1.1\r\nHost: fn\r\n\r\nGET http://fn/x HTTP/1.1\r\nHost: fn\r\nContent-Length: 2\r\n\r\nab',
      'POST / HTTP/1.1\r\nHost: fn\r\nContent-Length: 1x\r\n\r\n',
      'POST / HTTP/1.1\r\nHost: fn\r\nTransfer-Encoding: gzip\r\n\r\n',
      'GET / HTTP/1.1\r\nHost: fn\r\nAfterBurn-Timeout-Ms: 12a\r\n\r\n',
      'POST / HTTP/1.1\r\nHost: fn\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n',
      'GET * HTTP/1.1\r\nHost: fn\r\n\r\n',
    ];
    for (const text of streams) {
      const marksOfBuffer = [];
      const marksOfView = [];
      expect(framer().write(plainView(b(text)), marksOfView)).toEqual(framer().write(b(text), marksOfBuffer));
      expect(marksOfView).toEqual(marksOfBuffer);
    }
  });

  test('the guard it checks with is a plain FrameGuard: the same passes and errors, no marks', () => {
    const text = 'GET /a HTTP/1.1\r\nHost: fn\r\n\r\nPOST /b HTTP/1.1\r\nHost: fn\r\nContent-Length: 3\r\n\r\nabcGET  / HTTP/1.1\r\n';
    const f = framer();
    const marks = [];
    const r = f.write(b(text), marks);
    expect(r).toEqual(new FrameGuard({ maxHead: 1024, maxBody: 0 }).write(b(text)));
    expect(r.error).toMatchObject({ status: 400 });
    expect(f.guard.messages).toBe(2);
    expect(marks[marks.length - 2]).toBe(r.pass);
  });
});
