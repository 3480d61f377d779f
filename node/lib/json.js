'use strict';

// json(handler, options): a fetch-style handler for JSON in, JSON out, with the user's own
// parser, validator and serializer. The body is read whole and parsed (JSON.parse unless
// `parse` is given), then validated (`validate`, if given), then handed to the handler,
// whose result is serialized (JSON.stringify unless `stringify` is given).
//
// Input that cannot be decoded — an empty body, bad JSON, a value the validator refuses —
// is answered 400 `bad_request` with the library's error body (PROTOCOL.md §8.1, §8.2: "for
// typed handlers, undecodable input"), whose message names the offending position or the
// fields (paths) the validator names, never a validator's or parser's own message, which may
// quote the request's bytes (§8.1). The handler is not called then. Anything else that
// fails — the handler, the serializer — is the handler's failure: 500 handler_error (§8.3).
//
// A validator is what Node users bring:
//   - a function that throws (zod's schema.parse, yup's validateSync, a hand-written check):
//     the paths come from the error's `issues` (zod, valibot, Standard Schema), `errors`
//     (Ajv's ValidationError) or `inner` and `path` (yup);
//   - a function that returns false (an Ajv validate function): the paths come from its
//     `errors` (instancePath, or the older dataPath);
//   - a function that returns true or undefined: the parsed value goes on as it is; any other
//     value goes on instead of it (the typed, transformed value of zod's parse);
//   - a promise of any of these;
//   - a Standard Schema (an object with `~standard`, as zod, valibot and arktype export):
//     its `validate` result, `{ value }` or `{ issues }`.

const { isResponseLike } = require('./fetch');
const { loadUndici } = require('./undici');
const { errorBody } = require('./errors');

// The most paths named in a message, and the longest path kept: a bound on what a client's
// own keys can make the response hold.
const MAX_PATHS = 10;
const MAX_PATH_LENGTH = 100;

class UndecodableInput extends Error {
  constructor(message) {
    super(message);
    this.name = 'UndecodableInput';
  }
}

/**
 * @param {(value: any, request: Request, ctx: object) => unknown} handler called with the
 *   validated value; returns a Response (sent as it is), undefined (204), or a value to
 *   serialize as the 200 response's JSON body
 * @param {{validate?: Function | object, parse?: (text: string) => unknown,
 *   stringify?: (value: unknown) => string}} [options]
 * @returns {(request: Request, ctx: object) => Promise<Response>} a handler for serve()
 */
function json(handler, options = {}) {
  if (typeof handler !== 'function') throw new TypeError('afterburn: json(handler) needs a function');
  if (options === null || typeof options !== 'object') throw new TypeError('afterburn: json\'s options must be an object');
  const { validate, parse = JSON.parse, stringify = JSON.stringify } = options;
  if (validate !== undefined && typeof validate !== 'function' && !isStandardSchema(validate)) {
    throw new TypeError('afterburn: json: validate must be a function or a Standard Schema');
  }
  if (typeof parse !== 'function') throw new TypeError('afterburn: json: parse must be a function');
  if (typeof stringify !== 'function') throw new TypeError('afterburn: json: stringify must be a function');

  return async function jsonHandler(request, ctx) {
    const { Response } = loadUndici();
    let value;
    try {
      value = await decode(request, parse, validate);
    } catch (err) {
      if (!(err instanceof UndecodableInput)) throw err;
      return new Response(errorBody('bad_request', ctx.requestId, err.message), {
        status: 400,
        headers: { 'content-type': 'application/json', 'afterburn-error': 'bad_request' },
      });
    }
    const result = await handler(value, request, ctx);
    if (isResponseLike(result)) return result;
    if (result === undefined) return new Response(null, { status: 204 });
    const text = stringify(result);
    if (typeof text !== 'string') throw new TypeError(`afterburn: json: stringify returned ${typeof text}, not a string`);
    return new Response(text, { status: 200, headers: { 'content-type': 'application/json' } });
  };
}

async function decode(request, parse, validate) {
  const text = await request.text();
  if (text.length === 0) throw new UndecodableInput('the request body is empty; want JSON');
  let value;
  try {
    value = parse(text);
  } catch (err) {
    const at = /position (\d+)/.exec(err && err.message);
    throw new UndecodableInput(`the request body is not valid JSON${at ? ` (at position ${at[1]})` : ''}`);
  }
  if (validate === undefined) return value;
  if (isStandardSchema(validate)) {
    const result = await validate['~standard'].validate(value);
    if (result && Array.isArray(result.issues)) throw invalid(result.issues);
    return result.value;
  }
  let verdict;
  try {
    verdict = await validate(value, request);
  } catch (err) {
    throw invalid(issuesOf(err));
  }
  if (verdict === false) throw invalid(Array.isArray(validate.errors) ? validate.errors : []);
  if (verdict === true || verdict === undefined) return value;
  return verdict;
}

function issuesOf(err) {
  if (err === null || typeof err !== 'object') return [];
  if (Array.isArray(err.issues)) return err.issues; // zod, valibot, Standard Schema
  if (Array.isArray(err.errors)) return err.errors; // Ajv's ValidationError
  if (Array.isArray(err.inner) && err.inner.length > 0) return err.inner; // yup
  if (typeof err.path === 'string' && err.path !== '') return [err]; // yup, one error
  return [];
}

function invalid(issues) {
  const paths = [];
  for (const issue of issues) {
    const path = pathOf(issue);
    if (path !== null && !paths.includes(path)) paths.push(path);
  }
  if (paths.length === 0) return new UndecodableInput('the request body failed validation');
  const shown = paths.slice(0, MAX_PATHS).map((p) => (p.length > MAX_PATH_LENGTH ? `${p.slice(0, MAX_PATH_LENGTH)}...` : p));
  const more = paths.length > MAX_PATHS ? ` and ${paths.length - MAX_PATHS} more` : '';
  return new UndecodableInput(`the request body failed validation at ${shown.join(', ')}${more}`);
}

// An issue's field path as a JSON Pointer (RFC 6901, "" for the whole value), or null.
function pathOf(issue) {
  if (issue === null || typeof issue !== 'object') return null;
  if (typeof issue.instancePath === 'string') return issue.instancePath || '/'; // Ajv
  if (typeof issue.dataPath === 'string') return issue.dataPath || '/'; // Ajv before 7
  if (Array.isArray(issue.path)) {
    // zod: keys; valibot and Standard Schema: keys or { key }
    const keys = issue.path.map((k) => (k !== null && typeof k === 'object' && 'key' in k ? k.key : k));
    return keys.length === 0 ? '/' : `/${keys.map((k) => String(k).replace(/~/g, '~0').replace(/\//g, '~1')).join('/')}`;
  }
  if (typeof issue.path === 'string') return issue.path || '/'; // yup: "items[0].price"
  return null;
}

function isStandardSchema(v) {
  return v !== null && typeof v === 'object' && v['~standard'] !== null && typeof v['~standard'] === 'object' &&
    typeof v['~standard'].validate === 'function';
}

module.exports = { json };
