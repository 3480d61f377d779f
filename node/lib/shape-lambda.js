'use strict';

// lambda(handler): AWS Lambda's HTTP shape, payload format 2.0 (function URLs, API Gateway
// HTTP APIs), PROTOCOL.md §13 `lambda-http`:
//
//   exports.handler = async (event, context) => ({ statusCode: 200, body: 'hi' })
//   exports.handler = (event, context, callback) => callback(null, { statusCode: 200, body: 'hi' })
//
// The request becomes the event: version, routeKey "$default", rawPath, rawQueryString,
// cookies (the Cookie field split), headers (lower-case, a repeated name's values joined with
// ","), queryStringParameters (decoded, likewise joined), requestContext (http.method, path,
// protocol, sourceIp: the first X-Forwarded-For address or "0.0.0.0", userAgent; requestId:
// the request's id, §5.1; time, timeEpoch), body: text for the text types of §13 when it is
// valid UTF-8, base64 otherwise and for any other type or none (isBase64Encoded), absent
// when empty.
//
// The context: awsRequestId (the request id), getRemainingTimeInMillis() (the deadline's,
// §5.2; 2147483647, the longest a timer takes, without one), functionName and the rest from
// the AWS_LAMBDA_* variables where set, callbackWaitsForEmptyEventLoop (kept, not used), and
// the old done/succeed/fail.
//
// The handler answers with a promise (an async function), or through the callback: a handler
// that does not return a promise and declares a third parameter is waited for until it calls
// it (or context.done/succeed/fail); one that declares two is taken at its return value.
//
// The result: an object with statusCode is {statusCode, headers, cookies, body,
// isBase64Encoded} (body a string; headers' values strings, numbers or booleans; cookies each
// a Set-Cookie); anything else, as Lambda infers, is a 200 application/json body of the whole
// result (undefined as null). A result that cannot be a response (a statusCode that is no
// status, a body that is not a string, not base64 when it says so) is the handler's error:
// 500 handler_error (§8.3). The handler's own error (thrown, rejected, to the callback) is too.

const { isUtf8 } = require('node:buffer');
const { ShapeError, adapt, splitTarget, fieldPairs, bodyBytes, mediaType, checkStatus, describe,
  respond } = require('./shape');

const SHAPE = 'lambda';
const MAX_TIMER_MS = 2147483647; // setTimeout's longest delay
const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];

/**
 * @param {(event: object, context: object, callback?: Function) => unknown} handler
 * @returns {(request: Request, ctx: object) => Promise<Response>} a handler for serve()
 */
function lambda(handler) {
  if (typeof handler !== 'function') throw new TypeError('afterburn: lambda(handler) needs a function');
  return adapt(async (request, ctx) => {
    const event = await makeEvent(request, ctx);
    const result = await call(handler, event, makeContext(ctx));
    return makeResponse(result);
  });
}

/** §13: the types whose bodies are text; every other body is base64. */
function isText(contentType) {
  const { type } = mediaType(contentType);
  return type.startsWith('text/') || type === 'application/json' || /^application\/[^/]*\+(json|xml)$/.test(type) ||
    type === 'application/xml' || type === 'application/x-www-form-urlencoded' || type === 'application/javascript';
}

async function makeEvent(request, ctx) {
  const { path, query } = splitTarget(ctx.rawTarget);
  const headers = {};
  const cookies = [];
  for (const [name, value] of fieldPairs(ctx)) {
    if (name === 'cookie') {
      for (const c of value.split(';')) if (c.trim() !== '') cookies.push(c.trim());
      continue;
    }
    headers[name] = headers[name] === undefined ? value : `${headers[name]},${value}`;
  }
  const now = new Date();
  const event = {
    version: '2.0',
    routeKey: '$default',
    rawPath: path,
    rawQueryString: query,
  };
  if (cookies.length > 0) event.cookies = cookies;
  event.headers = headers;
  if (query !== '') event.queryStringParameters = queryParameters(query);
  const host = headers.host || '';
  event.requestContext = {
    accountId: 'anonymous',
    apiId: host.split('.')[0],
    domainName: host,
    domainPrefix: host.split('.')[0],
    http: {
      method: request.method,
      path,
      protocol: 'HTTP/1.1',
      sourceIp: (headers['x-forwarded-for'] || '').split(',')[0].trim() || '0.0.0.0',
      userAgent: headers['user-agent'] || '',
    },
    requestId: ctx.requestId,
    routeKey: '$default',
    stage: '$default',
    time: clfTime(now),
    timeEpoch: now.getTime(),
  };
  const bytes = await bodyBytes(request);
  // §13: text for a text type that is valid UTF-8; base64 otherwise, so no byte is lost.
  const text = isText(headers['content-type']) && isUtf8(bytes);
  if (bytes.length > 0) event.body = text ? bytes.toString('utf8') : bytes.toString('base64');
  event.isBase64Encoded = bytes.length > 0 && !text;
  return event;
}

// Decoded values, a repeated name's joined with ",". '+' stays '+', as API Gateway leaves it.
function queryParameters(query) {
  const out = {};
  for (const part of query.split('&')) {
    if (part === '') continue;
    const eq = part.indexOf('=');
    const name = decode(eq < 0 ? part : part.slice(0, eq));
    const value = eq < 0 ? '' : decode(part.slice(eq + 1));
    out[name] = out[name] === undefined ? value : `${out[name]},${value}`;
  }
  return out;
}

function decode(text) {
  try {
    return decodeURIComponent(text);
  } catch {
    return text; // a stray '%': as sent
  }
}

// "28/Nov/2026:10:00:00 +0000", requestContext.time's format.
function clfTime(d) {
  const p = (n) => String(n).padStart(2, '0');
  return `${p(d.getUTCDate())}/${MONTHS[d.getUTCMonth()]}/${d.getUTCFullYear()}:${p(d.getUTCHours())}:` +
    `${p(d.getUTCMinutes())}:${p(d.getUTCSeconds())} +0000`;
}

function makeContext(ctx) {
  const env = process.env;
  const name = env.AWS_LAMBDA_FUNCTION_NAME || 'afterburn-function';
  const context = {
    callbackWaitsForEmptyEventLoop: true,
    functionName: name,
    functionVersion: env.AWS_LAMBDA_FUNCTION_VERSION || '$LATEST',
    invokedFunctionArn: `arn:aws:lambda:${env.AWS_REGION || 'local'}:000000000000:function:${name}`,
    memoryLimitInMB: env.AWS_LAMBDA_FUNCTION_MEMORY_SIZE || '0',
    awsRequestId: ctx.requestId,
    logGroupName: env.AWS_LAMBDA_LOG_GROUP_NAME || `/aws/lambda/${name}`,
    logStreamName: env.AWS_LAMBDA_LOG_STREAM_NAME || `afterburn-worker-${env.AFTERBURN_WORKER_ID || process.pid}`,
    getRemainingTimeInMillis: () => (ctx.hasDeadline ? Math.floor(ctx.timeRemaining()) : MAX_TIMER_MS),
  };
  Object.defineProperty(context, 'afterburn', { value: ctx });
  return context;
}

/** The handler's result: its promise's, or what it gives the callback (context.done and the rest). */
function call(handler, event, context) {
  return new Promise((resolve, reject) => {
    let settled = false;
    const callback = (err, result) => {
      if (settled) return;
      settled = true;
      if (err !== undefined && err !== null) reject(err);
      else resolve(result);
    };
    context.done = callback;
    context.succeed = (result) => callback(null, result);
    context.fail = (err) => callback(err === undefined || err === null ? new Error('context.fail') : err);
    let returned;
    try {
      returned = handler(event, context, callback);
    } catch (err) {
      callback(err);
      return;
    }
    if (returned !== null && typeof returned === 'object' && typeof returned.then === 'function') {
      Promise.resolve(returned).then((result) => callback(null, result), (err) => callback(err === undefined || err === null ? new Error(`the handler rejected with ${err}`) : err));
    } else if (handler.length < 3) {
      callback(null, returned);
    }
  });
}

function makeResponse(result) {
  if (result === null || typeof result !== 'object' || !('statusCode' in result)) {
    // Lambda's inference: no statusCode, the whole result is a JSON body.
    let text;
    try {
      text = JSON.stringify(result === undefined ? null : result);
    } catch (err) {
      throw new ShapeError(SHAPE, `the result cannot be sent as JSON: ${err.message}`);
    }
    if (text === undefined) throw new ShapeError(SHAPE, `a ${typeof result} result cannot be sent as JSON`);
    return respond(200, [['content-type', 'application/json']], Buffer.from(text));
  }
  const status = checkStatus(SHAPE, result.statusCode);
  const fields = [];
  const { headers, cookies, body, isBase64Encoded } = result;
  if (headers !== undefined && headers !== null) {
    if (typeof headers !== 'object' || Array.isArray(headers)) {
      throw new ShapeError(SHAPE, `headers must be an object of names to values, not ${describe(headers)}`);
    }
    for (const [name, value] of Object.entries(headers)) {
      if (value === undefined || value === null) continue;
      if (typeof value === 'object') throw new ShapeError(SHAPE, `the header ${JSON.stringify(name)} must be a string, not ${describe(value)}`);
      fields.push([name, String(value)]);
    }
  }
  if (cookies !== undefined && cookies !== null) {
    if (!Array.isArray(cookies) || cookies.some((c) => typeof c !== 'string')) {
      throw new ShapeError(SHAPE, `cookies must be an array of strings, not ${describe(cookies)}`);
    }
    for (const c of cookies) fields.push(['set-cookie', c]);
  }
  let bytes = null;
  if (body !== undefined && body !== null) {
    if (typeof body !== 'string') throw new ShapeError(SHAPE, `body must be a string, not ${describe(body)}`);
    if (isBase64Encoded === true) {
      if (!/^[A-Za-z0-9+/]*={0,2}$/.test(body) || body.length % 4 !== 0) {
        throw new ShapeError(SHAPE, 'isBase64Encoded is true but the body is not base64');
      }
      bytes = Buffer.from(body, 'base64');
    } else {
      bytes = Buffer.from(body);
    }
  }
  return respond(status, fields, bytes);
}

module.exports = { lambda };
