'use strict';

// The ServerResponse a Connection (connection.js) gives http.Server: every head it writes
// carries the request's AfterBurn-Exchange token (PROTOCOL.md §4.6), through Node's public
// API only, and it never writes a 1xx response (§4.4).

const http = require('node:http');

const kExchange = Symbol('afterburn.exchange');
const EXCHANGE = 'afterburn-exchange';
const writeHead = http.ServerResponse.prototype.writeHead;

// The responses of a Connection. PROTOCOL.md §4.4: a library never sends 1xx responses —
// 100 Continue is the watchdog's job (§5.4) — so Node's informational writers do nothing
// but call back. The watchdog's clock is the one clients see: no Date field. Every head
// carries the request's exchange token (§4.6, writeHeadWithExchange).
class PipeResponse extends http.ServerResponse {
  constructor(req, options) {
    super(req, options);
    this.sendDate = false;
    this[kExchange] = null; // set by Connection for a request that carried one
    // Own properties, not methods: Express gives every response a prototype of its own
    // (Object.setPrototypeOf(res, app.response)), which would leave this class's out.
    this.writeHead = writeHeadWithExchange;
    this.writeContinue = skipInformational;
    this.writeProcessing = skipInformational;
    this.writeEarlyHints = skipEarlyHints;
  }
}

function skipInformational(cb) {
  if (typeof cb === 'function') process.nextTick(cb);
}

function skipEarlyHints(_hints, cb) {
  skipInformational(cb);
}

/**
 * Every head Node writes goes through writeHead: an explicit call, or the implicit one of
 * write(), end() and flushHeaders() (public behaviour: "if response.write() or response.end()
 * are called before calling this, the implicit/mutable headers will be calculated and call
 * this function"). The request's token is set as a field just before (§4.6), and a field of
 * that name the handler set, with setHeader or in writeHead's own fields, is dropped first,
 * so the library's is the only one and a request without a token gets none. Public API
 * only: Node's private head serialiser is not touched.
 */
function writeHeadWithExchange(statusCode, reason, fields) {
  if (this.headersSent) return writeHead.call(this, statusCode, reason, fields); // Node's own error
  if (this.hasHeader(EXCHANGE)) this.removeHeader(EXCHANGE);
  const withReason = typeof reason === 'string';
  let own = withoutExchange(withReason ? fields : reason ?? fields);
  const token = this[kExchange];
  if (token !== null) {
    if (Array.isArray(own) && own.length % 2 === 0 && this.getHeaderNames().length === 0) {
      // A list alone is written as given, repeated fields kept (Set-Cookie twice); a field
      // set beside it would make Node merge the list with setHeader, one value per name.
      own = own.concat(EXCHANGE, token);
    } else {
      this.setHeader(EXCHANGE, token); // merged with what writeHead is given (§4.6)
    }
  }
  return withReason ? writeHead.call(this, statusCode, reason, own) : writeHead.call(this, statusCode, own);
}

function isExchange(name) {
  return typeof name === 'string' && name.length === EXCHANGE.length && name.toLowerCase() === EXCHANGE;
}

// writeHead's own fields without AfterBurn-Exchange: an object, a flat [name, value, ...]
// array, or a list of [name, value] pairs (made flat: once a field was set, as the token is,
// Node merges only flat lists); anything else is left for Node to refuse.
function withoutExchange(fields) {
  if (fields === null || typeof fields !== 'object') return fields;
  if (Array.isArray(fields) && fields.length > 0 && Array.isArray(fields[0])) {
    const flat = [];
    for (const pair of fields) if (!isExchange(pair[0])) flat.push(pair[0], pair[1]);
    return flat;
  }
  if (Array.isArray(fields)) {
    if (fields.length % 2 !== 0) return fields; // Node's own error
    let found = false;
    for (let i = 0; i < fields.length && !found; i += 2) found = isExchange(fields[i]);
    if (!found) return fields;
    const kept = [];
    for (let i = 0; i < fields.length; i += 2) if (!isExchange(fields[i])) kept.push(fields[i], fields[i + 1]);
    return kept;
  }
  let kept = null;
  for (const name in fields) {
    if (!Object.hasOwn(fields, name) || !isExchange(name)) continue;
    kept ??= { ...fields };
    delete kept[name];
  }
  return kept ?? fields;
}

module.exports = { PipeResponse, kExchange, EXCHANGE };
