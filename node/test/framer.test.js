'use strict';

// The Framer alone: the fetch core's marks, made from what the FrameGuard finds as it checks.

const { Framer, MARK_BODY: BODY, MARK_END: END } = require('../lib/framer');
const { FrameGuard } = require('../lib/guard');

const LIMITS = { maxHead: 1024, maxBody: 0 };
const GET = 'GET /a HTTP/1.1\r\nHost: fn\r\n\r\n';
const POST = 'POST /b HTTP/1.1\r\nHost: fn\r\nContent-Length: 5\r\n\r\n';
const CHUNKED = 'T / HTTP/1.1\r\nHost: fn\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nx\r\n0\r\n\r\n';
const BAD = 'GET  / HTTP/1.1\r\n'; // rule 2, refused before its LF (offset 16)

/** The marks of each write in turn, through one Framer. */
function marksOf(writes) {
  const framer = new Framer(LIMITS);
  return writes.map((text) => {
    const marks = [];
    framer.write(Buffer.from(text, 'latin1'), marks);
    return marks;
  });
}

// Each write's marks are (offset, kind) pairs; the last pair ends where the guard stopped.
test.each([
  ['a message without a body ends with its head', [GET], [[GET.length, END]]],
  ['a Content-Length body is marked apart from its head, to its end, across writes',
    [`${GET}${POST}ab`, `cde${GET}GE`],
    [[GET.length, END, GET.length + POST.length, 0, GET.length + POST.length + 2, BODY],
      [3, BODY | END, 3 + GET.length, END, 3 + GET.length + 2, 0]]],
  ['a chunked body is llhttp\'s to read: a head across writes, then the message end', ['GE', CHUNKED],
    [[2, 0], [CHUNKED.length, END]]],
  ['at an error, the last pair ends where the guard stopped; after it nothing passes', [BAD, GET], [[16, 0], []]],
])('%s', (_, writes, want) => {
  expect(marksOf(writes)).toEqual(want);
});

test('the guard it checks with is a plain FrameGuard: the same passes and errors', () => {
  const text = `${GET}POST /b HTTP/1.1\r\nHost: fn\r\nContent-Length: 3\r\n\r\nabc${BAD}`;
  const framer = new Framer(LIMITS);
  const marks = [];
  const r = framer.write(Buffer.from(text, 'latin1'), marks);
  expect(r).toEqual(new FrameGuard(LIMITS).write(Buffer.from(text, 'latin1')));
  expect(r.error).toMatchObject({ status: 400 });
  expect(framer.guard.messages).toBe(2);
  expect(marks.slice(-2)).toEqual([r.pass, 0]);
});
