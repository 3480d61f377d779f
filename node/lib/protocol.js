'use strict';

// What both cores (connection.js for listeners, fetch-connection.js for fetch-style
// handlers) say the same way: the versions, the handshake (PROTOCOL.md §3), the stderr
// record of a failed handler (§8.3) and the bytes of a response head (§4.4). No Node HTTP
// module is loaded here: a fetch-style worker never needs one.

const { errorResponseBytes, exchangeLine } = require('./errors');

const LIBRARY_VERSION = require('../package.json').version;
const PROTOCOL_VERSION = '1'; // the one version of PROTOCOL.md this library speaks

// §2.5: the most lanes a worker serves unless serve's `maxLanes` says otherwise. Lanes cost a
// worker two descriptors and a few kilobytes each while idle; the watchdog's `lanes` setting
// is what usually decides (L = min(K, N)), so the default only has to be out of its way.
const DEFAULT_MAX_LANES = 1024;

// §2.5: the lanes a worker prefers when the watchdog offers them (its `lanes=auto`, the
// default): handlers on one event loop are written for concurrency, as with Node's `http`.
// Eight is where one worker stops gaining at c=8 (README.md, "Lanes by default"); serve's
// `preferredLanes` or AFTERBURN_NODE_PREFERRED_LANES change it, 1 keeps one exchange at a time.
const DEFAULT_PREFERRED_LANES = 8;

// §3.2: the reply. `exchange`: this library echoes every request's token (§4.6); `streams`
// with AfterBurn-Streams: it serves up to that many lanes (§2.5). Both are sent whether or
// not the watchdog gave the worker more than one lane: it ignores them then.
// AfterBurn-Streams-Preferred answers an offer of lanes (lanes=auto, §2.5), and only an offer.
function handshakeFields(maxLanes, preferred) {
  return [
    ['AfterBurn-Protocol', PROTOCOL_VERSION],
    ['AfterBurn-Library', `node/${LIBRARY_VERSION}`],
    ['AfterBurn-Capabilities', 'exchange, streams'],
    ['AfterBurn-Streams', String(maxLanes)],
    ...(preferred === null ? [] : [['AfterBurn-Streams-Preferred', String(Math.min(preferred, maxLanes))]]),
    ['Content-Length', '0'],
  ];
}

const handshakes = new Map(); // `${maxLanes} ${preferred}` -> {fields, lines, reply}: one per worker in practice

/**
 * The handshake reply's parts for a worker serving up to maxLanes lanes, made once;
 * `preferred` is the lanes it prefers when offered some (§2.5), null when not offered.
 */
function handshakeReply(maxLanes = DEFAULT_MAX_LANES, preferred = null) {
  const key = `${maxLanes} ${preferred}`;
  let hs = handshakes.get(key);
  if (hs === undefined) {
    const fields = Object.freeze(handshakeFields(maxLanes, preferred));
    const lines = fields.map(([n, v]) => `${n}: ${v}\r\n`).join('');
    // The first handshake carries no token (§4.6): the same bytes every time.
    hs = { fields, lines, reply: Buffer.from(`HTTP/1.1 200 OK\r\n${lines}\r\n`, 'latin1') };
    handshakes.set(key, hs);
  }
  return hs;
}

/**
 * The answer to a handshake offering `offered` (§3.1): the reply, or, when this library
 * speaks none of the versions, the §3.4 error after which the worker stops. A repeated
 * handshake (§3.5) carries a token, which the answer echoes (§4.6).
 * @param {string} offered the AfterBurn-Handshake value
 * @param {string | null} token the handshake's AfterBurn-Exchange, or null
 * @param {number} [maxLanes] the AfterBurn-Streams value (§2.5)
 * @param {number | null} [preferred] the AfterBurn-Streams-Preferred value, null when not offered lanes
 * @returns {{ok: boolean, bytes: Buffer, record?: string}}
 */
function answerHandshake(offered, token, maxLanes = DEFAULT_MAX_LANES, preferred = null) {
  const versions = offered.split(',').map((v) => v.trim());
  if (versions.includes(PROTOCOL_VERSION)) {
    const hs = handshakeReply(maxLanes, preferred);
    const bytes = token === null ? hs.reply
      : Buffer.from(`HTTP/1.1 200 OK\r\n${exchangeLine(token)}${hs.lines}\r\n`, 'latin1');
    return { ok: true, bytes };
  }
  return {
    ok: false,
    bytes: errorResponseBytes('version_mismatch', null, token, [['AfterBurn-Protocol', PROTOCOL_VERSION]]),
    record: `afterburn: the watchdog offers protocol versions ${JSON.stringify(offered)}; ` +
      `this library speaks ${PROTOCOL_VERSION}\n`,
  };
}

/** §8.3: the one stderr record of a failed handler; its first line names the request id. */
function handlerFailureRecord(requestId, method, url, err) {
  const detail = err instanceof Error ? err.stack || String(err) : `a non-Error value: ${safeString(err)}`;
  return `[${requestId}] afterburn: handler failed on ${method} ${pathOf(url)}\n${indent(detail)}\n`;
}

function pathOf(url) {
  const q = url.indexOf('?');
  return q < 0 ? url : url.slice(0, q); // the query may hold secrets (§9.5)
}

function indent(text) {
  return text.replace(/^/gm, '    ');
}

function safeString(value) {
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    return String(value);
  }
}

module.exports = {
  LIBRARY_VERSION, PROTOCOL_VERSION, DEFAULT_MAX_LANES, DEFAULT_PREFERRED_LANES, handshakeReply, answerHandshake, handlerFailureRecord,
};
