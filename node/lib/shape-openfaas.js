'use strict';

// openfaas(handler): the OpenFaaS Node templates' shape (node18, node20, node22 of
// github.com/openfaas/templates), PROTOCOL.md §13 `openfaas-http`:
//
//   module.exports = async (event, context) => context.status(201).headers({...}).succeed(body)
//
// event is { body, headers, method, query, path }, as the template's Express entry makes it;
// context is its FunctionContext: status(n), headers(obj), succeed(value), fail(err), and
// the same as a third argument, a callback (err, value). A value returned without calling
// succeed or fail is succeeded with. What the template does, and so what this does where
// conformance/shapes/openfaas-http.json says nothing:
//
//   - no Content-Type: the request is taken as text/plain, and event.headers says so;
//   - the body by its type: application/json parsed (an object or array: body-parser's
//     strict mode; an empty one is {}), application/x-www-form-urlencoded an object (a
//     repeated name an array), text/* a string in its charset; with RAW_BODY=true (the
//     template's setting) every body is a Buffer;
//   - event.headers are Node's req.headers: lower-case names, repeated values joined with
//     ", " ("; " for Cookie, Set-Cookie an array); event.query is the decoded query (a
//     repeated name an array); event.path the path as sent, without the query;
//   - succeed(value): an object, an array (or a number, a boolean) as JSON, a string as it is
//     (text/html; charset=utf-8 unless the handler set a Content-Type, as Express's send
//     does), a Buffer as bytes, nothing as an empty body; the status and headers the
//     context holds;
//   - fail(err) / callback(err): the status the context holds (500 if it is still 200, for
//     fail) and String(err) as the body, err logged, as the template's callback does.
//
// Where this differs from the template, on purpose:
//   - a body of any other type (application/octet-stream, images) is a Buffer, where
//     body-parser leaves {} and the bytes are lost; a request without a body parses as an
//     empty one of its type ('' for text), where body-parser leaves {};
//   - a handler that throws or rejects is a 500 handler_error with the §8.1 body, its stack
//     on stderr (§8.3), not its message sent to the client;
//   - bad JSON is a 400 bad_request with the §8.1 body (the template's Express answers 400
//     with an HTML page); there is no 100 kB body limit: the watchdog's max_request_body is;
//   - the query's bracket syntax (a[b]=1, qs's "extended" mode) is not expanded: the name is
//     "a[b]".

const { ShapeError, BadEvent, adapt, splitTarget, fieldPairs, bodyBytes, mediaType, decodeText, checkStatus,
  describe, respond, hasField } = require('./shape');

const SHAPE = 'openfaas';

/**
 * @param {(event: object, context: object, callback: Function) => unknown} handler
 * @param {{rawBody?: boolean}} [options] rawBody: every body a Buffer (default: the
 *   RAW_BODY environment variable is "true", as in the template)
 * @returns {(request: Request, ctx: object) => Promise<Response>} a handler for serve()
 */
function openfaas(handler, { rawBody = process.env.RAW_BODY === 'true' } = {}) {
  if (typeof handler !== 'function') throw new TypeError('afterburn: openfaas(handler) needs a function');
  return adapt(async (request, ctx) => {
    const event = await makeEvent(request, ctx, rawBody);
    return call(handler, event, ctx);
  });
}

async function makeEvent(request, ctx, rawBody) {
  const fields = fieldPairs(ctx);
  const headers = nodeHeaders(fields);
  // The template's first middleware: a request without a Content-Type is text/plain.
  if (!headers['content-type']) headers['content-type'] = 'text/plain';
  const { path, query } = splitTarget(ctx.rawTarget);
  const bytes = await bodyBytes(request);
  return {
    body: rawBody ? bytes : parseBody(bytes, headers['content-type']),
    headers,
    method: request.method,
    query: queryObject(query),
    path,
  };
}

/** Node's IncomingMessage.headers of these fields. */
function nodeHeaders(fields) {
  const headers = {};
  for (const [name, value] of fields) {
    const had = headers[name];
    if (name === 'set-cookie') headers[name] = had === undefined ? [value] : [...had, value];
    else if (had === undefined) headers[name] = value;
    else headers[name] = `${had}${name === 'cookie' ? '; ' : ', '}${value}`;
  }
  return headers;
}

/** name -> value, a repeated name's values as an array (qs's way, Express's req.query). */
function queryObject(text) {
  const out = {};
  for (const [name, value] of new URLSearchParams(text)) {
    const had = out[name];
    if (had === undefined) out[name] = value;
    else out[name] = Array.isArray(had) ? [...had, value] : [had, value];
  }
  return out;
}

function parseBody(bytes, contentType) {
  const { type, charset } = mediaType(contentType);
  if (type === 'application/json') {
    const text = decodeText(bytes, charset);
    // body-parser's strict mode: an object or an array, nothing else; an empty body is {}.
    const first = /\S/.exec(text);
    if (first === null) return {};
    if (first[0] !== '{' && first[0] !== '[') throw new BadEvent('the request body is not a JSON object or array');
    try {
      return JSON.parse(text);
    } catch (err) {
      const at = /position (\d+)/.exec(err && err.message);
      throw new BadEvent(`the request body is not valid JSON${at ? ` (at position ${at[1]})` : ''}`);
    }
  }
  if (type === 'application/x-www-form-urlencoded') return queryObject(decodeText(bytes, charset));
  if (type.startsWith('text/')) return decodeText(bytes, charset);
  return bytes;
}

/** Calls the handler; resolves with the Response of the first of succeed, fail, callback, return. */
function call(handler, event, ctx) {
  return new Promise((resolve, reject) => {
    let answered = false;
    const answer = (err, value) => {
      if (answered) return;
      answered = true;
      try {
        resolve(err ? failure(context, err, ctx) : success(context, value));
      } catch (e) {
        reject(e);
      }
    };
    const context = new FunctionContext(answer);
    Object.defineProperty(context, 'afterburn', { value: ctx });
    Promise.resolve()
      .then(() => handler(event, context, answer))
      .then((value) => answer(undefined, value), (err) => {
        if (!answered) {
          answered = true;
          reject(err); // §8.3: 500 handler_error, the stack on stderr
        } else {
          ctx.log('afterburn: openfaas: the handler failed after it answered:', err);
        }
      });
  });
}

// The template's FunctionContext: status() and headers() read without an argument.
class FunctionContext {
  constructor(answer) {
    this.statusCode = 200;
    this.headerValues = {};
    this.cbCalled = 0;
    Object.defineProperty(this, 'answer', { value: answer });
  }

  status(statusCode) {
    if (!statusCode) return this.statusCode;
    this.statusCode = statusCode;
    return this;
  }

  headers(value) {
    if (!value) return this.headerValues;
    this.headerValues = value;
    return this;
  }

  succeed(value) {
    this.cbCalled++;
    this.answer(undefined, value);
  }

  fail(value) {
    if (this.status() == 200) this.status(500); // eslint-disable-line eqeqeq
    this.cbCalled++;
    this.answer(value);
  }
}

function success(context, value) {
  const status = checkStatus(SHAPE, context.status(), { digits: true });
  const fields = headerFields(context.headers());
  let body = null;
  let type = null;
  if (value === undefined || value === null) {
    body = null;
  } else if (typeof value === 'string') {
    body = Buffer.from(value);
    type = 'text/html; charset=utf-8';
  } else if (value instanceof Uint8Array) {
    body = value;
    type = 'application/octet-stream';
  } else if (typeof value === 'object' || typeof value === 'number' || typeof value === 'boolean') {
    let text;
    try {
      text = JSON.stringify(value);
    } catch (err) {
      throw new ShapeError(SHAPE, `the result cannot be sent as JSON: ${err.message}`);
    }
    body = Buffer.from(text);
    type = 'application/json';
  } else {
    throw new ShapeError(SHAPE, `a ${typeof value} cannot be sent as a response body`);
  }
  if (type !== null && !hasField(fields, 'content-type')) fields.push(['content-type', type]);
  return respond(status, fields, body);
}

function failure(context, err, ctx) {
  ctx.log(err);
  const status = checkStatus(SHAPE, context.status(), { digits: true });
  return respond(status, [['content-type', 'text/html; charset=utf-8']], Buffer.from(String(err)));
}

/** The context's headers, an object of names to a value or an array of values, as pairs. */
function headerFields(headers) {
  if (headers === null || typeof headers !== 'object' || Array.isArray(headers)) {
    throw new ShapeError(SHAPE, `the headers must be an object of names to values, not ${describe(headers)}`);
  }
  const fields = [];
  for (const [name, value] of Object.entries(headers)) {
    if (value === undefined || value === null) continue;
    for (const v of Array.isArray(value) ? value : [value]) fields.push([name, String(v)]);
  }
  return fields;
}

module.exports = { openfaas };
