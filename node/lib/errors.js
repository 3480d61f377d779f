'use strict';

// The error responses of PROTOCOL.md §8. A ProtocolError is a request the library cannot
// parse (§4.3, §8.8) or a failed handshake (§3.4): it carries the status and type of §8.2
// for the response, and a detail naming the offending value for stderr only. Also the §4.6
// field line that echoes a request's exchange token, for these responses, the handshake
// reply and the listener core's heads (the fetch core spells it inline, fetch-response.js).

const { STATUS_CODES } = require('node:http');

// PROTOCOL.md §8.2: the closed list of types a library raises, with their status.
const ERROR_STATUS = Object.freeze({
  bad_request: 400,
  headers_too_large: 431,
  body_too_large: 413,
  not_implemented: 501,
  handler_error: 500,
  version_mismatch: 400,
});

// PROTOCOL.md §8.1: one fixed sentence per type. It never carries a handler's exception
// message or request bytes, which may hold secrets; details go to stderr only.
const MESSAGES = Object.freeze({
  bad_request: 'the request is malformed',
  headers_too_large: 'the request head is larger than the limit',
  body_too_large: 'the request body is larger than the limit',
  not_implemented: 'the request uses a transfer coding other than chunked',
  handler_error: 'the function failed while handling the request',
  version_mismatch: 'the library speaks none of the offered protocol versions',
});

class ProtocolError extends Error {
  /**
   * @param {keyof ERROR_STATUS} type
   * @param {string} detail what was wrong, for stderr; never sent on the wire
   */
  constructor(type, detail) {
    super(`afterburn: ${MESSAGES[type]}: ${detail}`);
    this.name = 'ProtocolError';
    this.type = type;
    this.status = ERROR_STATUS[type];
    // The AfterBurn-Exchange token of the request, set by the guard for an error it finds
    // once that request's head was read and before any exchange has it (guard.js, §4.6).
    this.exchange = null;
  }
}

const badRequest = (detail) => new ProtocolError('bad_request', detail);
const headersTooLarge = (limit) => new ProtocolError('headers_too_large', `more than ${limit} bytes`);
const bodyTooLarge = (limit) => new ProtocolError('body_too_large', `more than ${limit} bytes`);
const notImplemented = (value) =>
  new ProtocolError('not_implemented', `Transfer-Encoding ${JSON.stringify(value)}`);

/**
 * The JSON body of PROTOCOL.md §8.1.
 * @param {string} [message] another sentence than the type's own: only for bad_request from
 *   a typed handler, which names the offending field or position (§8.1, lib/json.js)
 */
function errorBody(type, requestId, message = MESSAGES[type]) {
  const body = { type, message };
  if (requestId) body.request_id = requestId;
  return JSON.stringify(body);
}

/**
 * A complete §8.1 error response as bytes: the status of §8.2, the request's exchange token
 * when it had one (§4.6), Content-Type, the AfterBurn-Error field naming the type, any extra
 * [name, value] fields, and a Content-Length body.
 * @param {string | null} token the request's AfterBurn-Exchange, or null
 */
function errorResponseBytes(type, requestId, token, extra = []) {
  const status = ERROR_STATUS[type];
  const body = Buffer.from(errorBody(type, requestId));
  let head = `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\n${exchangeLine(token)}` +
    `Content-Type: application/json\r\nAfterBurn-Error: ${type}\r\n`;
  for (const [name, value] of extra) head += `${name}: ${value}\r\n`;
  head += `Content-Length: ${body.length}\r\n\r\n`;
  return Buffer.concat([Buffer.from(head, 'latin1'), body]);
}

/**
 * PROTOCOL.md §4.6: the field line that echoes a request's exchange token, or '' for a
 * request without one. The heads this library writes put it right after the status line.
 */
function exchangeLine(token) {
  return token === null ? '' : `AfterBurn-Exchange: ${token}\r\n`;
}

/**
 * PROTOCOL.md §8.8: the stderr record of a framing error, led by the id of the request
 * whose body it broke (`owner`: that exchange, with its ctx), if any. Both cores.
 */
function framingRecord(error, owner) {
  return `${owner ? `[${owner.ctx.requestId}] ` : ''}${error.message}\n`;
}

/**
 * The §8.1 response to a framing error. §4.6: it carries the token of the request it broke,
 * once that request's head was read: the exchange's (`owner`) for an error in its body, the
 * guard's (error.exchange) for one at the end of its head. Both cores.
 */
function framingResponseBytes(error, owner) {
  const token = owner ? owner.exchange : error.exchange;
  return errorResponseBytes(error.type, owner ? owner.ctx.requestId : null, token);
}

/**
 * Maps an llhttp error code (Node's clientError) to the §4.3 rule it breaks. Every parse
 * error is a 400 except an oversized head (rule 11, 431) and a transfer coding llhttp
 * does not know (rule 8, 501); `inTrailers` tells the trailer section, whose overflow is
 * rule 9's 400. The FrameGuard meets most of these first; this is the backstop.
 */
function fromParserError(err, inTrailers) {
  const code = (err && err.code) || 'HPE_UNKNOWN';
  if (code === 'HPE_HEADER_OVERFLOW' && !inTrailers) return new ProtocolError('headers_too_large', code);
  if (code === 'HPE_INVALID_TRANSFER_ENCODING' && /invalid `Transfer-Encoding`/i.test(err.reason || '')) {
    return new ProtocolError('not_implemented', code); // rule 8
  }
  return badRequest(`${code}: ${(err && err.reason) || (err && err.message)}`);
}

module.exports = {
  ERROR_STATUS,
  MESSAGES,
  ProtocolError,
  badRequest,
  headersTooLarge,
  bodyTooLarge,
  notImplemented,
  errorBody,
  errorResponseBytes,
  exchangeLine,
  framingRecord,
  framingResponseBytes,
  fromParserError,
};
