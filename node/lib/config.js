'use strict';

// The environment of PROTOCOL.md §2.3, read once at start-up. None of it is required
// (§11.1): without AFTERBURN_FDS the protocol is on fds 0 and 1, without the limits the
// library accepts heads of up to 65536 bytes and bodies of any size (§7.3).

const DEFAULT_MAX_HEAD = 65536;
const HEAD_SLACK = 1024; // §7.3: room for the fields the watchdog adds

class ConfigError extends Error {
  constructor(message) {
    super(`afterburn: ${message}`);
    this.name = 'ConfigError';
  }
}

function nonNegativeInteger(env, name) {
  const raw = env[name];
  if (raw === undefined || raw === '') return null;
  if (!/^[0-9]+$/.test(raw) || !Number.isSafeInteger(Number(raw))) {
    throw new ConfigError(`bad ${name} in environment: ${JSON.stringify(raw)}`);
  }
  return Number(raw);
}

/** PROTOCOL.md §7.3: the request limits, the head limit with its slack included. */
function limitsFromEnv(env) {
  const head = nonNegativeInteger(env, 'AFTERBURN_MAX_HEADER_BYTES');
  const body = nonNegativeInteger(env, 'AFTERBURN_MAX_BODY_BYTES');
  return {
    maxHead: head === null ? DEFAULT_MAX_HEAD : head + HEAD_SLACK,
    maxBody: body === null ? 0 : body,
  };
}

/**
 * PROTOCOL.md §2.2, §2.3: the request and response descriptors. A value that is not two
 * decimal descriptors separated by a comma is refused.
 */
function fdsFromEnv(env) {
  const raw = env.AFTERBURN_FDS;
  if (raw === undefined) return { input: 0, output: 1 };
  const m = /^([0-9]{1,9}),([0-9]{1,9})$/.exec(raw);
  if (!m) throw new ConfigError(`bad AFTERBURN_FDS in environment: ${JSON.stringify(raw)}; want two descriptors like "3,4"`);
  return { input: Number(m[1]), output: Number(m[2]) };
}

/**
 * PROTOCOL.md §2.5: the descriptors of lanes 2 to K (request, response pairs) and of the
 * cancel pipe. Both variables are absent when the watchdog asks for one lane; a value that
 * is not an even number of decimal descriptors (AFTERBURN_STREAM_FDS) or not one
 * (AFTERBURN_STREAM_CANCEL_FD) is refused, as §2.2 refuses a bad AFTERBURN_FDS. Under the
 * watchdog's lanes=auto the lanes are an offer, named by AFTERBURN_STREAM_OFFER_FDS and
 * AFTERBURN_STREAM_OFFER_CANCEL_FD instead (`offered` is then true): the worker serves as
 * many as it prefers. The watchdog sets one pair or the other, never both.
 * @returns {{lanes: Array<[number, number]>, cancel: number | null, offered: boolean}}
 */
function streamsFromEnv(env) {
  const given = env.AFTERBURN_STREAM_FDS;
  const offered = (given === undefined || given === '') &&
    env.AFTERBURN_STREAM_OFFER_FDS !== undefined && env.AFTERBURN_STREAM_OFFER_FDS !== '';
  const fdsName = offered ? 'AFTERBURN_STREAM_OFFER_FDS' : 'AFTERBURN_STREAM_FDS';
  const cancelName = offered ? 'AFTERBURN_STREAM_OFFER_CANCEL_FD' : 'AFTERBURN_STREAM_CANCEL_FD';
  const raw = env[fdsName];
  const lanes = [];
  if (raw !== undefined && raw !== '') {
    const parts = raw.split(',');
    if (parts.length % 2 !== 0 || !parts.every((p) => /^[0-9]{1,9}$/.test(p))) {
      throw new ConfigError(`bad ${fdsName} in environment: ${JSON.stringify(raw)}; ` +
        'want an even number of descriptors like "5,6,7,8"');
    }
    for (let i = 0; i < parts.length; i += 2) lanes.push([Number(parts[i]), Number(parts[i + 1])]);
  }
  const rawCancel = env[cancelName];
  let cancel = null;
  if (rawCancel !== undefined && rawCancel !== '') {
    if (!/^[0-9]{1,9}$/.test(rawCancel)) {
      throw new ConfigError(`bad ${cancelName} in environment: ${JSON.stringify(rawCancel)}; want one descriptor like "9"`);
    }
    cancel = Number(rawCancel);
  }
  // A descriptor named twice, or one of stdio's, would have two lanes (or a lane and the
  // logs) read or write the same pipe: no watchdog does that, and nothing could be served.
  const all = lanes.flat().concat(cancel === null ? [] : [cancel]);
  const bad = all.find((fd, i) => fd <= 2 || all.indexOf(fd) !== i);
  if (bad !== undefined) {
    throw new ConfigError(`bad ${fdsName} or ${cancelName} in environment: descriptor ${bad} ` +
      `is ${bad <= 2 ? 'one of stdio\'s' : 'named twice'}`);
  }
  return { lanes, cancel, offered };
}

/**
 * AFTERBURN_NODE_PREFERRED_LANES: the lanes this worker prefers when the watchdog offers
 * some (§2.5), over serve's `preferredLanes`; 1 serves one exchange at a time, as before.
 * @returns {number | null} null when unset
 */
function preferredLanesFromEnv(env) {
  const raw = env.AFTERBURN_NODE_PREFERRED_LANES;
  if (raw === undefined || raw === '') return null;
  if (!/^[0-9]{1,9}$/.test(raw) || Number(raw) < 1) {
    throw new ConfigError(`bad AFTERBURN_NODE_PREFERRED_LANES in environment: ${JSON.stringify(raw)}; want a number of lanes, at least 1`);
  }
  return Number(raw);
}

/**
 * AFTERBURN_LOG_FORMAT, set by the watchdog from its log_format: `json` makes ctx.log write
 * JSON lines; `text`, unset or anything else keeps text (a log line is never worth ending a
 * worker for).
 * @returns {'text' | 'json'}
 */
function logFormatFromEnv(env) {
  return env.AFTERBURN_LOG_FORMAT === 'json' ? 'json' : 'text';
}

module.exports = { limitsFromEnv, fdsFromEnv, streamsFromEnv, preferredLanesFromEnv, logFormatFromEnv, ConfigError, DEFAULT_MAX_HEAD, HEAD_SLACK };
