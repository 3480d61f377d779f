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

module.exports = { limitsFromEnv, fdsFromEnv, ConfigError, DEFAULT_MAX_HEAD, HEAD_SLACK };
