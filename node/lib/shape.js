'use strict';

// What the handler-shape adapters share (PROTOCOL.md §13): each turns a fetch-style request
// into another platform's event and its result into a Response, so that a function written
// for that platform is served by serve() unchanged (lib/shape-openfaas.js,
// lib/shape-lambda.js, lib/shape-cloudevents.js). Nothing here changes the pipes.
//
// Two ways an adapter fails, as §13 says:
//   - the request does not make the platform's event (bad JSON where the platform parses
//     JSON, a CloudEvent without its id): the client's fault, 400 bad_request (§8.2) with
//     the §8.1 body, returned as a Response; the handler is not called;
//   - the handler's result cannot be made a response (a statusCode that is no status, a
//     body that is not base64): the handler's fault, thrown as a ShapeError, which the core
//     answers 500 handler_error and logs with its stack (§8.3), the worker kept.

const { loadUndici } = require('./undici');
const { errorBody } = require('./errors');

/** The handler's result is not a response: thrown, so the core answers 500 handler_error. */
class ShapeError extends TypeError {
  constructor(shape, message) {
    super(`afterburn: ${shape}: ${message}`);
    this.name = 'ShapeError';
  }
}

/** The request is not the platform's event: answered 400 bad_request by the adapter. */
class BadEvent extends Error {
  constructor(message) {
    super(message);
    this.name = 'BadEvent';
  }
}

/** §8.1's 400 bad_request response; `message` names the field or position, never request bytes. */
function badRequest(ctx, message) {
  const { Response } = loadUndici();
  return new Response(errorBody('bad_request', ctx.requestId, message), {
    status: 400,
    headers: { 'content-type': 'application/json', 'afterburn-error': 'bad_request' },
  });
}

/**
 * Wraps an adapter's step `(request, ctx) => Response`: a BadEvent it throws becomes the 400
 * response; anything else thrown is the handler's failure (500 handler_error, §8.3).
 */
function adapt(step) {
  return async function shapeHandler(request, ctx) {
    try {
      return await step(request, ctx);
    } catch (err) {
      if (err instanceof BadEvent) return badRequest(ctx, err.message);
      throw err;
    }
  };
}

/** The request target as sent, split: the path and the query string without its '?'. */
function splitTarget(rawTarget) {
  const q = rawTarget.indexOf('?');
  return q < 0 ? { path: rawTarget, query: '' } : { path: rawTarget.slice(0, q), query: rawTarget.slice(q + 1) };
}

/** The request's fields as [lower-case name, value] pairs, in order, repeated names apart. */
function fieldPairs(ctx) {
  return ctx.rawHeaders.map(([name, value]) => [name.toLowerCase(), value]);
}

/** The whole request body as a Buffer (empty without one). */
async function bodyBytes(request) {
  if (request.body === null) return Buffer.alloc(0);
  return Buffer.from(await request.arrayBuffer());
}

/** A Content-Type's media type, lower-case, without parameters ('' without one), and its charset. */
function mediaType(contentType) {
  if (typeof contentType !== 'string') return { type: '', charset: null };
  const [type, ...params] = contentType.split(';');
  let charset = null;
  for (const p of params) {
    const eq = p.indexOf('=');
    if (eq > 0 && p.slice(0, eq).trim().toLowerCase() === 'charset') {
      charset = p.slice(eq + 1).trim().replace(/^"(.*)"$/, '$1');
    }
  }
  return { type: type.trim().toLowerCase(), charset };
}

/** Bytes as text in the charset named (UTF-8 by default); an unknown charset is a BadEvent. */
function decodeText(bytes, charset) {
  let decoder;
  try {
    decoder = new TextDecoder(charset || 'utf-8');
  } catch {
    throw new BadEvent('the request body\'s charset is not supported');
  }
  return decoder.decode(bytes);
}

/** A status the handler gave: an integer from 100 to 599 (a string of one, as Node takes it, when `digits`). */
function checkStatus(shape, status, { digits = false } = {}) {
  let n = status;
  if (digits && typeof status === 'string' && /^[1-5]\d\d$/.test(status)) n = Number(status);
  if (typeof n !== 'number' || !Number.isInteger(n) || n < 100 || n > 599) {
    throw new ShapeError(shape, `the status must be an integer from 100 to 599, not ${describe(status)}`);
  }
  if (n < 200) throw new ShapeError(shape, `the status ${n} is informational; a response needs a final status (200 to 599)`);
  return n;
}

/** A value as a log shows it: short, its type plain. */
function describe(value) {
  if (typeof value === 'string') return JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}...` : value);
  if (value === null || typeof value !== 'object') return String(value);
  return Array.isArray(value) ? 'an array' : 'an object';
}

/**
 * The Response: bytes (or nothing) with exactly the fields given, [name, value] pairs (none
 * added: undici would add a Content-Type to a string body). 204 and 304 carry no body.
 */
function respond(status, fields, body) {
  const { Response } = loadUndici();
  const empty = body === null || body === undefined || body.length === 0 || status === 204 || status === 304;
  const headers = new (loadUndici().Headers)();
  for (const [name, value] of fields) headers.append(name, value);
  return new Response(empty ? null : body, { status, headers });
}

/** Whether `fields` has a field of this lower-case name. */
function hasField(fields, name) {
  return fields.some(([n]) => n.toLowerCase() === name);
}

module.exports = {
  ShapeError, BadEvent, adapt, badRequest, splitTarget, fieldPairs, bodyBytes, mediaType, decodeText,
  checkStatus, describe, respond, hasField,
};
