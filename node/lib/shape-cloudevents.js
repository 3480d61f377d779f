'use strict';

// cloudevents(handler): CloudEvents 1.0 over HTTP (binary and structured mode), in the shape
// of Knative Functions' Node templates (knative/func templates/node/cloudevents, served there
// by faas-js-runtime), PROTOCOL.md §13 `cloudevents`:
//
//   const handle = async (context, event) => new CloudEvent({ source, type, data })
//   module.exports = { handle };
//
// The event is a CloudEvent of the `cloudevents` npm SDK (an optional peer dependency: this
// adapter alone needs it, and says so when it is missing). The context is faas-js-runtime's:
// body, query (its names also on the context itself), headers, method, httpVersion,
// contentType, log (info, warn, error, debug, trace, fatal: the request's ctx.log),
// cloudevent, cloudEventResponse(data) (a builder: .id() .source() .type() .version()
// .response()).
//
// The SDK parses the event and writes a reply, but on its own it makes up what is missing (an
// id, a time) where §13 wants a 400 or nothing: so the request's mode and its required
// attributes (specversion 1.0 or 0.3, id, source, type) are checked here first, ce-* values
// are percent-decoded (and a reply's encoded) as the HTTP binding says, and `time` is given as
// sent or not at all. A batch (application/cloudevents-batch+json) is refused with 400.
//
// The result: a CloudEvent (the SDK's, or any object whose class is named CloudEvent) is
// written in binary mode, status 200; nothing (undefined, null, '') is 204; a string is a
// text/plain body; an object with statusCode, headers or body is that response (without a
// body and a statusCode, 204, as Knative's documentation says); any other value a JSON body.
// The handler's error is a 500 handler_error (§8.3), not faas-js-runtime's message body.

const { ShapeError, BadEvent, adapt, splitTarget, fieldPairs, bodyBytes, mediaType, decodeText, checkStatus,
  describe, respond, hasField } = require('./shape');

const SHAPE = 'cloudevents';
const REQUIRED = ['specversion', 'id', 'source', 'type'];
const VERSIONS = ['1.0', '0.3'];

/** The cloudevents SDK, or a clear error: it is an optional peer dependency. */
function loadSdk() {
  try {
    return require('cloudevents');
  } catch (err) {
    if (err && err.code === 'MODULE_NOT_FOUND' && /'cloudevents'/.test(err.message)) {
      throw new Error('afterburn: cloudevents(handler) needs the "cloudevents" package (npm install cloudevents@10), ' +
        'an optional peer dependency of afterburn-runtime that only this adapter uses');
    }
    throw err;
  }
}

/**
 * @param {(context: object, event: object) => unknown} handler
 * @returns {(request: Request, ctx: object) => Promise<Response>} a handler for serve()
 */
function cloudevents(handler) {
  if (typeof handler !== 'function') throw new TypeError('afterburn: cloudevents(handler) needs a function');
  const sdk = loadSdk(); // at start-up, so a missing package fails the worker's initialisation
  return adapt(async (request, ctx) => {
    const fields = fieldPairs(ctx);
    const headers = {};
    for (const [name, value] of fields) headers[name] = headers[name] === undefined ? value : `${headers[name]}, ${value}`;
    const bytes = await bodyBytes(request);
    const event = toEvent(sdk, headers, bytes);
    const context = new Context(request, ctx, headers, bytes, event, sdk);
    const result = await handler(context, event);
    return makeResponse(sdk, result);
  });
}

function toEvent(sdk, fields, bytes) {
  let headers = fields;
  const { type, charset } = mediaType(headers['content-type']);
  let body;
  if (type === 'application/cloudevents-batch+json') throw new BadEvent('a batch of CloudEvents is not supported; send them one by one');
  if (type === 'application/cloudevents+json') {
    let parsed;
    try {
      parsed = JSON.parse(decodeText(bytes, charset));
    } catch (err) {
      if (err instanceof BadEvent) throw err;
      throw new BadEvent('the structured-mode CloudEvent is not valid JSON');
    }
    if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) {
      throw new BadEvent('the structured-mode CloudEvent is not a JSON object');
    }
    checkAttributes((name) => parsed[name], (name) => name);
    // The SDK looks its parser up by the whole Content-Type, parameters and all: it is given
    // the object, under the plain media type.
    headers = { ...headers, 'content-type': 'application/cloudevents+json' };
    body = parsed;
  } else if (headers['ce-specversion'] !== undefined || headers['ce-id'] !== undefined) {
    // HTTP binding 3.1.3.2: ce-* values are percent-encoded (UTF-8); the SDK does not decode.
    headers = { ...headers };
    for (const name of Object.keys(headers)) if (name.startsWith('ce-')) headers[name] = percentDecode(headers[name]);
    checkAttributes((name) => headers[`ce-${name}`], (name) => `ce-${name}`);
    if (bytes.length === 0) body = undefined;
    else if (type === 'application/json' || /^application\/[^/]*\+json$/.test(type)) body = jsonData(decodeText(bytes, charset));
    else if (type.startsWith('text/')) body = decodeText(bytes, charset);
    else body = bytes;
  } else {
    throw new BadEvent('the request is not a CloudEvent: no ce-specversion field and no application/cloudevents+json body');
  }
  let event;
  try {
    event = sdk.HTTP.toEvent({ headers, body });
    // The SDK reads `time` through Date and gives it back as toISOString() writes it
    // ("10:00:00Z" becomes "10:00:00.000Z"), and stamps the current time on an event sent
    // without one: the handler gets it as sent, or none.
    const time = type === 'application/cloudevents+json' ? body.time : headers['ce-time'];
    if (time === undefined) event = withoutTime(sdk, event);
    else if (event.time !== time) event = new sdk.CloudEvent({ ...event, time }, false);
    event.validate();
  } catch (err) {
    throw new BadEvent(`the request is not a valid CloudEvent${invalidAt(err)}`);
  }
  return event;
}

/** A ce-* value percent-decoded: %XX sequences as UTF-8 bytes, other characters as they came. */
function percentDecode(value) {
  if (!value.includes('%')) return value;
  const bytes = [];
  for (let i = 0; i < value.length; i++) {
    if (value[i] === '%' && /^[0-9A-Fa-f]{2}$/.test(value.slice(i + 1, i + 3))) {
      bytes.push(parseInt(value.slice(i + 1, i + 3), 16));
      i += 2;
    } else {
      bytes.push(value.charCodeAt(i) & 0xff); // a field value's bytes, as latin1
    }
  }
  return Buffer.from(bytes).toString('utf8');
}

/** HTTP binding 3.1.3.2: a space, '"', '%' and anything outside printable ASCII, percent-encoded. */
function percentEncode(value) {
  return String(value).replace(/[^\x21\x23-\x24\x26-\x7e]/gu,
    (c) => [...Buffer.from(c, 'utf8')].map((b) => `%${b.toString(16).toUpperCase().padStart(2, '0')}`).join(''));
}

// The SDK's CloudEvent, but without the `time` its constructor stamps on one sent without:
// the same prototype (instanceof, validate, cloneWith), frozen likewise, and a toJSON that
// writes no time rather than throwing on none.
const untimed = new WeakMap();
function withoutTime(sdk, event) {
  let proto = untimed.get(sdk);
  if (proto === undefined) {
    proto = Object.create(sdk.CloudEvent.prototype, {
      toJSON: {
        value: function toJSON() {
          const e = { ...this };
          if (e.data_base64 && e.data) delete e.data;
          return e;
        },
      },
    });
    untimed.set(sdk, proto);
  }
  const props = { ...event };
  delete props.time;
  return Object.freeze(Object.assign(Object.create(proto), props));
}

// JSON data, parsed here whatever the Content-Type's parameters (the SDK parses only an exact
// "application/json"); an object or array is handed over parsed, anything else as its text.
function jsonData(text) {
  let value;
  try {
    value = JSON.parse(text);
  } catch {
    throw new BadEvent('the CloudEvent\'s data is not valid JSON, as its content type says');
  }
  return value !== null && typeof value === 'object' ? value : text;
}

// The required attributes are there, non-empty, and the version is one the SDK reads.
function checkAttributes(get, spell) {
  for (const name of REQUIRED) {
    const value = get(name);
    if (typeof value !== 'string' || value === '') throw new BadEvent(`the CloudEvent has no ${spell(name)}`);
  }
  if (!VERSIONS.includes(get('specversion'))) throw new BadEvent(`the CloudEvent's ${spell('specversion')} is not 1.0`);
}

// The attributes the SDK's validator names (never its message, which may quote the request).
function invalidAt(err) {
  const errors = err && Array.isArray(err.errors) ? err.errors : [];
  const names = errors.map((e) => (e && e.params && e.params.missingProperty) || (e && e.instancePath)).filter(Boolean);
  return names.length > 0 ? ` (at ${[...new Set(names)].slice(0, 5).join(', ')})` : '';
}

// faas-js-runtime's Context.
class Context {
  constructor(request, ctx, headers, bytes, event, sdk) {
    const { query } = splitTarget(ctx.rawTarget);
    const q = {};
    for (const [name, value] of new URLSearchParams(query)) q[name] = value;
    const { type, charset } = mediaType(headers['content-type']);
    let body;
    if (bytes.length === 0) body = undefined;
    else if (type === 'application/json' || type === 'application/cloudevents+json') {
      try {
        body = JSON.parse(decodeText(bytes, charset));
      } catch {
        body = decodeText(bytes, charset);
      }
    } else if (type.startsWith('text/')) body = decodeText(bytes, charset);
    else body = bytes;
    this.body = body;
    this.query = { ...q };
    this.headers = headers;
    this.method = request.method;
    this.httpVersion = '1.1';
    this.httpVersionMajor = 1;
    this.httpVersionMinor = 1;
    this.contentType = headers['content-type'];
    Object.assign(this, q);
    this.log = logger(ctx);
    this.cloudevent = event;
    Object.defineProperty(this, 'afterburn', { value: ctx });
    Object.defineProperty(this, 'sdk', { value: sdk });
  }

  cloudEventResponse(data) {
    const sdk = this.sdk;
    const attributes = { data };
    const builder = {
      version: (v) => { attributes.specversion = v; return builder; },
      id: (v) => { attributes.id = v; return builder; },
      type: (v) => { attributes.type = v; return builder; },
      source: (v) => { attributes.source = v; return builder; },
      response: () => new sdk.CloudEvent(attributes),
    };
    return builder;
  }
}

// A pino-shaped logger on ctx.log: one record per call, tagged with the request id.
function logger(ctx) {
  const log = {};
  for (const level of ['trace', 'debug', 'info', 'warn', 'error', 'fatal']) {
    log[level] = (...args) => ctx.log(level, ...args);
  }
  return log;
}

function isCloudEvent(sdk, value) {
  return value instanceof sdk.CloudEvent || (value !== null && typeof value === 'object' &&
    value.constructor !== undefined && value.constructor.name === 'CloudEvent');
}

function makeResponse(sdk, result) {
  if (isCloudEvent(sdk, result)) {
    let message;
    try {
      message = sdk.HTTP.binary(result);
    } catch (err) {
      throw new ShapeError(SHAPE, `the CloudEvent returned cannot be written: ${err.message}`);
    }
    const fields = Object.entries(message.headers).map(([n, v]) => [n, n.startsWith('ce-') ? percentEncode(v) : String(v)]);
    const body = message.body === undefined || message.body === null ? null
      : typeof message.body === 'string' ? Buffer.from(message.body) : Buffer.from(message.body);
    return respond(200, fields, body);
  }
  if (result === undefined || result === null || result === '') return respond(204, [], null);
  if (typeof result === 'string') return respond(200, [['content-type', 'text/plain; charset=utf-8']], Buffer.from(result));
  if (typeof result === 'object' && !(result instanceof Uint8Array) &&
      ('statusCode' in result || 'headers' in result || 'body' in result)) {
    return plainResponse(result);
  }
  return respond(200, [['content-type', 'application/json; charset=utf-8']], json(result));
}

function plainResponse({ statusCode, headers, body }) {
  const fields = [];
  if (headers !== undefined && headers !== null) {
    if (typeof headers !== 'object' || Array.isArray(headers)) {
      throw new ShapeError(SHAPE, `headers must be an object of names to values, not ${describe(headers)}`);
    }
    for (const [name, value] of Object.entries(headers)) {
      if (value === undefined || value === null) continue;
      for (const v of Array.isArray(value) ? value : [value]) fields.push([name.toLowerCase(), String(v)]);
    }
  }
  let bytes = null;
  let type = null;
  if (typeof body === 'string') {
    bytes = Buffer.from(body);
    type = 'text/plain; charset=utf-8';
  } else if (body instanceof Uint8Array) {
    bytes = body;
    type = 'application/octet-stream';
  } else if (body !== undefined && body !== null) {
    bytes = json(body);
    type = 'application/json; charset=utf-8';
  }
  const status = statusCode === undefined || statusCode === null ? (bytes === null ? 204 : 200) : checkStatus(SHAPE, statusCode);
  if (type !== null && !hasField(fields, 'content-type')) fields.push(['content-type', type]);
  return respond(status, fields, bytes);
}

function json(value) {
  let text;
  try {
    text = JSON.stringify(value);
  } catch (err) {
    throw new ShapeError(SHAPE, `the result cannot be sent as JSON: ${err.message}`);
  }
  if (text === undefined) throw new ShapeError(SHAPE, `a ${typeof value} result cannot be sent as JSON`);
  return Buffer.from(text);
}

module.exports = { cloudevents };
