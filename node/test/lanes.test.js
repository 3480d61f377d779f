'use strict';

// Lanes (PROTOCOL.md §2.5): a worker started as the watchdog starts one with `lanes` K > 1
// (test/support/lanes.js plays the watchdog on named pipes), in both handler styles
// (test/apps/lanes-app.js), and the conformance fixture's lane routes. The shared parse
// vectors run on lanes 2 to K, each on a lane of its own, all at once.

const { spawnSync } = require('node:child_process');
const { startLanes, get, HANDSHAKE } = require('./support/lanes');
const { loadVectors, checkEcho, checkParseVector } = require('./support/vectors');
const { checkFetchEcho } = require('./support/fetch-echo');
const { NODE_DIR } = require('./support/watchdog');

// fetch-public: the fetch style on Node's public http machinery, as where _http_common is gone.
const STYLES = [['fetch'], ['fetch-public'], ['listener']];
const field = (r, name) => r.headers.find(([n]) => n === name)?.[1];
const json = (r) => JSON.parse(r.body.toString('utf8'));

let worker = null;
afterEach(() => {
  if (worker !== null) worker.kill(); // a test that failed half-way leaves nothing running
  worker = null;
});

function start(args, options) {
  worker = startLanes(args, options);
  return worker;
}

// The watchdog's own signal that a worker serves: the handshake reply on lane 1 (§3.1).
async function ready(w) {
  w.lane(1).send(HANDSHAKE);
  await w.lane(1).responses(1);
}

// A failure shows the worker's stderr beside the assertion (STYLE.md habit 8).
async function withStderr(w, fn) {
  try {
    return await fn();
  } catch (err) {
    err.message += `\nworker stderr:\n${w.stderr()}`;
    throw err;
  }
}

describe.each(STYLES)('lanes, %s style', (style) => {
  const app = ['test/apps/lanes-app.js', style];

  test('the handshake on lane 1 lists exchange and streams, with AfterBurn-Streams: 1024', async () => {
    const w = start(app, { lanes: 2 });
    w.lane(1).send(HANDSHAKE);
    const [reply] = await w.lane(1).responses(1);
    expect([reply.status, field(reply, 'afterburn-capabilities'), field(reply, 'afterburn-streams')])
      .toEqual([200, 'exchange, streams', '1024']);
    // Lanes given, not offered: no preference is stated (§2.5).
    expect(field(reply, 'afterburn-streams-preferred')).toBeUndefined();
    expect(await w.endAll()).toEqual({ code: 0, signal: null });
  });

  test('offered K = 10 lanes (lanes=auto, §2.5) it states AfterBurn-Streams-Preferred: 8, closes lanes 9 and 10 and serves 1 to 8 at once', async () => {
    const w = start(app, { lanes: 10, offer: true });
    await withStderr(w, async () => {
      for (const n of [9, 10]) expect((await w.lane(n).eof()).length).toBe(0);
      w.lane(1).send(HANDSHAKE);
      const [reply] = await w.lane(1).responses(1);
      expect([field(reply, 'afterburn-streams'), field(reply, 'afterburn-streams-preferred')]).toEqual(['1024', '8']);
      const started = performance.now();
      for (const l of w.lanes.slice(0, 8)) l.send(get('/sleep?ms=300'));
      const got = await Promise.all(w.lanes.slice(0, 8).map((l) => l.responses(l.n === 1 ? 2 : 1)));
      expect(got.map((rs) => json(rs[rs.length - 1]))).toEqual(Array(8).fill({ slept_ms: 300 }));
      expect(performance.now() - started).toBeLessThan(1500); // one after another: 2400 ms
      expect(await w.endAll()).toEqual({ code: 0, signal: null });
    });
  });

  test('AFTERBURN_NODE_PREFERRED_LANES=1 makes an offer one lane as without lanes: Preferred 1, lanes 2 to K and the cancel pipe closed', async () => {
    const w = start(app, { lanes: 3, offer: true, env: { AFTERBURN_NODE_PREFERRED_LANES: '1' } });
    await withStderr(w, async () => {
      for (const n of [2, 3]) expect((await w.lane(n).eof()).length).toBe(0);
      w.lane(1).send(HANDSHAKE);
      const [reply] = await w.lane(1).responses(1);
      expect(field(reply, 'afterburn-streams-preferred')).toBe('1');
      expect(() => w.cancel('cancel x\n')).toThrow(/EPIPE/); // no reader left
      w.lane(1).send(get('/echo/one'));
      const [r] = (await w.lane(1).responses(2)).slice(1);
      expect([r.status, json(r).path]).toEqual([200, '/echo/one']);
      expect(await w.endAll()).toEqual({ code: 0, signal: null });
    });
  });

  test('four requests on four lanes to a 500 ms handler finish together (under 1500 ms)', async () => {
    const w = start(app, { lanes: 4 });
    await withStderr(w, async () => {
      await ready(w); // the clock starts once the worker is serving, not at its start-up
      const started = performance.now();
      for (const l of w.lanes) l.send(get('/sleep?ms=500'));
      const got = await Promise.all(w.lanes.map((l) => l.responses(l.n === 1 ? 2 : 1)));
      const took = performance.now() - started;
      expect(got.map((rs) => json(rs[rs.length - 1]))).toEqual(Array(4).fill({ slept_ms: 500 }));
      expect(took).toBeLessThan(1500); // one after another would take 2000 ms
      expect(await w.endAll()).toEqual({ code: 0, signal: null });
    });
  });

  test('a lane whose response pipe is not read does not hold a request on another lane', async () => {
    const w = start(app, { lanes: 3 });
    await withStderr(w, async () => {
      const size = 2 << 20; // far more than a 64 KiB pipe and what the worker buffers before it waits
      w.lane(2).stopReading();
      w.lane(2).send(get('/large?size=' + size, { token: 'big' }));
      w.lane(3).send(get('/echo/after', { token: 'small' }));
      const [small] = await w.lane(3).responses(1);
      expect([small.status, json(small).path, field(small, 'afterburn-exchange')]).toEqual([200, '/echo/after', 'small']);
      expect(w.lane(2).output.length).toBeLessThan(size); // it is still stuck in its pipe
      // Once read, the large response is whole and in order.
      w.lane(2).resumeReading();
      const [large] = await w.lane(2).responses(1);
      expect(large.body.length).toBe(size);
      expect(large.body.every((byte, i) => byte === i % 251)).toBe(true);
      expect(await w.endAll()).toEqual({ code: 0, signal: null });
    });
  }, 30000);

  test('cancel TOKEN aborts ctx.signal of that exchange only; unknown tokens and other lines are ignored; nothing reaches the next exchange', async () => {
    const w = start(app, { lanes: 3 });
    await withStderr(w, async () => {
      w.lane(2).send(get('/wait-cancel?ms=20000', { id: 'rid-2', token: 'tok2' }));
      w.lane(3).send(get('/wait-cancel?ms=300', { id: 'rid-3', token: 'tok3' }));
      // Both handlers are waiting once lane 3's answer can no longer be early: send the
      // cancel lines after a request on lane 1 has gone through (the loop has read both heads).
      w.lane(1).send(get('/echo/sync'));
      await w.lane(1).responses(1);
      w.cancel('cancel unknown1\nnot a cancel line\ncancel tok2 extra\ncan');
      w.cancel('cel tok2\n'); // a line split across two writes is still one line
      const [cancelled] = await w.lane(2).responses(1);
      expect([json(cancelled), field(cancelled, 'afterburn-exchange')]).toEqual([{ cancelled: true }, 'tok2']);
      const [waited] = await w.lane(3).responses(1);
      expect([json(waited), field(waited, 'afterburn-exchange')]).toEqual([{ cancelled: false }, 'tok3']);
      // The next exchange on the cancelled lane: no cancellation left over, and the old
      // token (whose exchange is over) cancels nothing.
      w.lane(2).send(get('/wait-cancel?ms=200', { id: 'rid-2b', token: 'tok2b' }));
      w.cancel('cancel tok2\n');
      const [next] = (await w.lane(2).responses(2)).slice(1);
      expect([json(next), field(next, 'afterburn-exchange')]).toEqual([{ cancelled: false }, 'tok2b']);
      expect(await w.endAll()).toEqual({ code: 0, signal: null });
      expect(w.stderr()).toBe('cancelled rid-2\n');
    });
  });

  test('a handler that fails on its cancellation gets the library\'s 500 with its token; the lane serves on', async () => {
    const w = start(app, { lanes: 2 });
    await withStderr(w, async () => {
      await ready(w); // lane 2's head is read before the cancel line: see the test above
      w.lane(2).send(get('/wait-cancel?ms=20000&throw=1', { id: 'rid-t', token: 'thr' }));
      w.lane(1).send(get('/echo/sync'));
      await w.lane(1).responses(2);
      w.cancel('cancel thr\n');
      const [failed] = await w.lane(2).responses(1);
      expect([failed.status, field(failed, 'afterburn-error'), field(failed, 'afterburn-exchange'), json(failed).request_id])
        .toEqual([500, 'handler_error', 'thr', 'rid-t']);
      w.lane(2).send(get('/echo/next', { token: 'nxt' }));
      const [, next] = await w.lane(2).responses(2);
      expect([next.status, json(next).path, field(next, 'afterburn-exchange')]).toEqual([200, '/echo/next', 'nxt']);
      expect(await w.endAll()).toEqual({ code: 0, signal: null });
      expect(w.stderr()).toMatch(/^\[rid-t\] afterburn: handler failed on GET \/wait-cancel\n {4}AbortError: /);
    });
  });

  test('the deadline (AfterBurn-Timeout-Ms) aborts ctx.signal too, 50 ms after it (§2.5, §8.6)', async () => {
    const w = start(app, { lanes: 2 });
    await withStderr(w, async () => {
      const sent = performance.now();
      w.lane(2).send(get('/wait-cancel?ms=20000', { id: 'late', token: 't', timeoutMs: 50 }));
      const [r] = await w.lane(2).responses(1);
      expect(performance.now() - sent).toBeGreaterThanOrEqual(100);
      expect(json(r)).toEqual({ cancelled: true });
      expect(await w.endAll()).toEqual({ code: 0, signal: null });
      expect(w.stderr()).toBe('cancelled late\n');
    });
  });

  test.each([[2, 4], [1, 3]])('with maxLanes N = %i < K = %i the worker closes lanes N+1..K and states AfterBurn-Streams: N', async (max, lanes) => {
    const w = start([...app, String(max)], { lanes });
    await withStderr(w, async () => {
      for (let n = max + 1; n <= lanes; n++) expect((await w.lane(n).eof()).length).toBe(0);
      w.lane(1).send(HANDSHAKE);
      const [reply] = await w.lane(1).responses(1);
      expect(field(reply, 'afterburn-streams')).toBe(String(max));
      const last = w.lane(max);
      last.send(get('/echo/last', { token: 'x2' }));
      const [r] = (await last.responses(max === 1 ? 2 : 1)).slice(-1);
      expect([r.status, json(r).path]).toEqual([200, '/echo/last']);
      expect(await w.endAll()).toEqual({ code: 0, signal: null });
    });
  });

  test('a framing error on lane 2 ends lane 2 alone (§8.8); lane 1 serves on', async () => {
    const w = start(app, { lanes: 2 });
    await withStderr(w, async () => {
      w.lane(1).send(get('/sleep?ms=200'));
      w.lane(2).send('GARBAGE\r\n\r\n');
      const output = await w.lane(2).eof(); // the error, then the lane's pipe closed
      expect(output.toString('latin1')).toMatch(/^HTTP\/1\.1 400 /);
      w.lane(1).send(get('/echo/still'));
      const [slept, still] = await w.lane(1).responses(2);
      expect([json(slept), json(still).path]).toEqual([{ slept_ms: 200 }, '/echo/still']);
      expect(w.stderr()).toMatch(/afterburn: lane 2 stopped \(status 1\)/);
      // The lane that failed did not end at EOF between requests: the exit says so (§9.4).
      expect((await w.endAll()).code).toBe(1);
    });
  });

  test('exits 0 once every lane read EOF between requests, after finishing the exchanges in flight', async () => {
    const w = start(app, { lanes: 3 });
    await withStderr(w, async () => {
      w.lane(2).send(get('/sleep?ms=200', { token: 'inflight' }));
      w.lane(3).end(); // EOF at once on lane 3: that lane ends, the others go on
      expect((await w.lane(3).eof()).length).toBe(0);
      w.lane(1).end();
      w.lane(2).end(); // EOF behind a request in flight
      const output = await w.lane(2).eof();
      const [r] = await w.lane(2).responses(1);
      expect([json(r), field(r, 'afterburn-exchange')]).toEqual([{ slept_ms: 200 }, 'inflight']);
      expect(output.length).toBeGreaterThan(0);
      expect(await w.closed).toEqual({ code: 0, signal: null });
      expect(w.stderr()).toBe('');
    });
  });

  test('a handshake offering no version it speaks ends the whole worker non-zero (§3.4), not lane 1 alone', async () => {
    const w = start(app, { lanes: 3 });
    await withStderr(w, async () => {
      w.lane(1).send(HANDSHAKE.replace('AfterBurn-Handshake: 1', 'AfterBurn-Handshake: 7'));
      const [reply] = await w.lane(1).responses(1);
      expect([reply.status, field(reply, 'afterburn-protocol')]).toEqual([400, '1']);
      expect(await w.closed).toEqual({ code: 1, signal: null });
    });
  });

  test('ctx.log writes each line as "[request id] text" on stderr', async () => {
    const w = start(app, { lanes: 2 });
    await withStderr(w, async () => {
      w.lane(2).send(get(`/log?text=${encodeURIComponent('two\nlines')}`, { id: 'rid-log', token: 'l' }));
      const [r] = await w.lane(2).responses(1);
      expect(json(r)).toEqual({ logged: true });
      expect(await w.endAll()).toEqual({ code: 0, signal: null });
      expect(w.stderr()).toBe('[rid-log] two\n[rid-log] lines\n');
    });
  });
});

describe('the fixture on lanes (conformance/README.md: /sleep, /wait-cancel, /ignore-cancel, /log)', () => {
  const fixture = ['test/fixture/fixture.js'];

  test('sleeps hold their own lane only; /wait-cancel, /ignore-cancel and /log answer as the contract says', async () => {
    const w = start(fixture, { lanes: 4 });
    await withStderr(w, async () => {
      await ready(w);
      const started = performance.now();
      w.lane(1).send(get('/sleep?ms=500'));
      w.lane(2).send(get('/ignore-cancel?ms=500', { token: 'ign' }));
      w.lane(3).send(get('/wait-cancel?ms=20000', { id: 'fx-3', token: 'wc' }));
      w.lane(4).send(get('/log?text=hi', { id: 'fx-4', token: 'lg' }));
      const [logged] = await w.lane(4).responses(1);
      expect(json(logged)).toEqual({ logged: true });
      w.cancel('cancel ign\ncancel wc\n');
      const [cancelled] = await w.lane(3).responses(1);
      expect(json(cancelled)).toEqual({ cancelled: true });
      const [, slept] = await w.lane(1).responses(2);
      const [ignored] = await w.lane(2).responses(1);
      expect([json(slept), json(ignored)]).toEqual([{ slept_ms: 500 }, { slept_ms: 500 }]);
      expect(performance.now() - started).toBeLessThan(1500);
      expect(await w.endAll()).toEqual({ code: 0, signal: null });
      expect(w.stderr().split('\n').sort()).toEqual(['', '[fx-4] hi', 'cancelled fx-3']);
    });
  });
});

test.each([0, -1, 1.5, '4', Number.NaN])('serve and serveListener refuse preferredLanes %p before serving', (preferredLanes) => {
  const { serve, serveListener } = require('afterburn-runtime');
  expect(() => serve(() => null, { preferredLanes })).toThrow(RangeError);
  expect(() => serveListener(() => null, { preferredLanes })).toThrow(RangeError);
});

test.each([0, -1, 1.5, '4', Number.NaN])('serve and serveListener refuse maxLanes %p before serving', (maxLanes) => {
  const { serve, serveListener } = require('..');
  expect(() => serve(() => null, { maxLanes })).toThrow(RangeError);
  expect(() => serveListener(() => null, { maxLanes })).toThrow(RangeError);
  expect(() => serve(() => null, 'x')).toThrow(TypeError);
});

describe('bad lane variables end the worker non-zero with a message (§2.5)', () => {
  test.each([
    ['AFTERBURN_STREAM_FDS', '5,6,7', /bad AFTERBURN_STREAM_FDS in environment: "5,6,7"/],
    ['AFTERBURN_STREAM_FDS', '5,x', /bad AFTERBURN_STREAM_FDS in environment: "5,x"/],
    ['AFTERBURN_STREAM_FDS', '5, 6', /bad AFTERBURN_STREAM_FDS/],
    ['AFTERBURN_STREAM_FDS', '5,5', /descriptor 5 is named twice/],
    ['AFTERBURN_STREAM_FDS', '1,6', /descriptor 1 is one of stdio's/],
    ['AFTERBURN_STREAM_CANCEL_FD', '9,10', /bad AFTERBURN_STREAM_CANCEL_FD in environment: "9,10"/],
    ['AFTERBURN_STREAM_CANCEL_FD', '-1', /bad AFTERBURN_STREAM_CANCEL_FD/],
  ])('%s=%j', (name, value, message) => {
    const r = spawnSync(process.execPath, ['test/apps/lanes-app.js', 'fetch'], {
      cwd: NODE_DIR,
      env: { ...process.env, AFTERBURN_FDS: '3,4', [name]: value },
      stdio: ['ignore', 'ignore', 'pipe', 'pipe', 'pipe'],
      encoding: 'utf8',
      timeout: 10000,
    });
    expect(r.status).not.toBe(0);
    expect(r.status).not.toBe(null);
    expect(r.stderr).toMatch(message);
  });
});

// Each parse vector on a lane of its own (2 to K), all in one worker per vector
// environment, every lane at once; lane 1 only reads EOF. A lane's exit status is what its
// stop says on stderr ("lane N stopped (status S)"); a lane that ended at EOF says nothing.
describe.each([
  ['fetch', checkFetchEcho],
  ['fetch-public', checkFetchEcho],
  ['listener', checkEcho],
])('parse vectors on lanes 2 to K, %s style', (style, checkEchoed) => {
  const vectors = loadVectors('parse');
  const results = new Map(); // vector id -> {code, responses, rest}

  beforeAll(async () => {
    const groups = new Map();
    for (const v of vectors) {
      const key = JSON.stringify(v.env);
      if (!groups.has(key)) groups.set(key, []);
      groups.get(key).push(v);
    }
    for (const group of groups.values()) {
      const w = startLanes(['test/apps/lanes-app.js', style], { lanes: group.length + 1, env: group[0].env });
      try {
        const outputs = await Promise.all(group.map(async (v, i) => {
          const lane = w.lane(i + 2);
          for (const segment of v.segments) lane.send(segment);
          lane.end();
          return lane.eof();
        }));
        w.lane(1).end();
        await w.endAll();
        const stops = new Map([...w.stderr().matchAll(/afterburn: lane (\d+) stopped \(status (\d+)\)/g)]
          .map((m) => [Number(m[1]), Number(m[2])]));
        const { readResponses } = require('../lib/response-reader');
        group.forEach((v, i) => {
          results.set(v.id, { code: stops.get(i + 2) ?? 0, ...readResponses(outputs[i]) });
        });
      } finally {
        w.kill();
      }
    }
  }, 60000);

  test.each(vectors.map((v) => [v.id, v]))('%s', (_id, vector) => {
    const result = results.get(vector.id);
    expect(result).toBeDefined();
    expect(checkParseVector(vector, result, checkEchoed)).toEqual([]);
  });
});
