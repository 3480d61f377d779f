'use strict';

// afterburn-runtime: the worker side of the AfterBurn/1 pipe protocol (spec/PROTOCOL.md).
//
//   serve(async (request, ctx) => new Response('hi'))   fetch-style, undici classes
//   serveListener(app)                                  any (req, res) listener: Express, Koa...
//   context(req)                                        request id and deadline, listener style
//   serve(json((value, request, ctx) => result, { validate, parse, stringify }))
//                                                       JSON in and out, validated (lib/json.js)
//
//   serve(openfaas(handler))   serve(lambda(handler))   serve(cloudevents(handle))
//                                                       functions written for OpenFaaS's Node
//                                                       templates, AWS Lambda (HTTP, payload
//                                                       2.0), Knative's CloudEvents (§13)
//   onShutdown(async () => ...)                         runs before the worker exits (§9.4)
//
// Both take { maxLanes, preferredLanes }: the most exchanges served at once when the
// watchdog gives the worker several lanes (PROTOCOL.md §2.5; 1024 by default), and how many
// it prefers when the watchdog offers lanes (its default, lanes=auto; 8 by default, 1 to
// serve one exchange at a time).

const { run, onShutdown } = require('./lib/child');
const { kContext } = require('./lib/context');
const { LIBRARY_VERSION, PROTOCOL_VERSION, DEFAULT_MAX_LANES, DEFAULT_PREFERRED_LANES } = require('./lib/protocol');

// serve's options: { maxLanes }, the AfterBurn-Streams this worker states, and
// { preferredLanes }, its AfterBurn-Streams-Preferred when offered lanes (§2.5).
function runOptions(options, name) {
  if (options === undefined) return { maxLanes: DEFAULT_MAX_LANES, preferredLanes: DEFAULT_PREFERRED_LANES };
  if (options === null || typeof options !== 'object') throw new TypeError(`afterburn: ${name}'s options must be an object`);
  const { maxLanes = DEFAULT_MAX_LANES, preferredLanes = DEFAULT_PREFERRED_LANES } = options;
  for (const [key, value] of [['maxLanes', maxLanes], ['preferredLanes', preferredLanes]]) {
    if (!Number.isSafeInteger(value) || value < 1) {
      throw new RangeError(`afterburn: ${name}: ${key} must be an integer of at least 1, not ${String(value)}`);
    }
  }
  return { maxLanes, preferredLanes };
}

/**
 * Serves a fetch-style handler on the protocol pipes until the watchdog closes them.
 * The handler gets undici's Request and a context, and returns a Response (from this
 * package's exports, from undici, or Node's global one) or a promise of one.
 * @param {Function} handler
 * @param {{maxLanes?: number, preferredLanes?: number}} [options] maxLanes: the most lanes
 *   served at once; preferredLanes: how many when the watchdog offers lanes (§2.5)
 */
function serve(handler, options) {
  if (typeof handler !== 'function') throw new TypeError('afterburn: serve(handler) needs a function');
  run(handler, { fetch: true, ...runOptions(options, 'serve') });
}

/**
 * Serves a Node request listener, `(req, res) => void`, on the protocol pipes: an Express
 * or Koa app (`app` or `app.callback()`), or a plain function. An http.Server is accepted
 * too: its 'request' listeners are used.
 */
function serveListener(listener, options) {
  const options_ = runOptions(options, 'serveListener');
  if (listener && typeof listener.listeners === 'function' && typeof listener.listen === 'function' &&
      typeof listener.emit === 'function' && listener.listeners('request').length > 0) {
    const server = listener;
    listener = (req, res) => server.emit('request', req, res);
  }
  if (typeof listener !== 'function') throw new TypeError('afterburn: serveListener(listener) needs a function');
  run((req, res) => listener(req, res), options_);
}

/**
 * The AfterBurn context of a request served by serveListener: request id (§5.1),
 * deadline (§5.2), cancellation signal (§2.5) and per-request logger. Returns undefined
 * for a request this library did not make.
 */
function context(req) {
  return req ? req[kContext] : undefined;
}

module.exports = {
  serve,
  json: (handler, options) => require('./lib/json').json(handler, options),
  serveListener,
  context,
  onShutdown,
  // PROTOCOL.md §13: adapters from other platforms' handler shapes to a fetch-style handler.
  openfaas: (handler, options) => require('./lib/shape-openfaas').openfaas(handler, options),
  lambda: (handler) => require('./lib/shape-lambda').lambda(handler),
  cloudevents: (handler) => require('./lib/shape-cloudevents').cloudevents(handler),
  version: LIBRARY_VERSION,
  defaultMaxLanes: DEFAULT_MAX_LANES,
  defaultPreferredLanes: DEFAULT_PREFERRED_LANES,
  protocolVersion: PROTOCOL_VERSION,
};

// undici's classes, loaded on first use: `instanceof` on the requests serve() makes holds
// for these, and a listener-style worker never loads undici. Response is undici's subclass
// that makes a string or bytes body's stream only when asked for (lib/known-body.js).
for (const name of ['Request', 'Response', 'Headers', 'FormData']) {
  Object.defineProperty(module.exports, name, {
    enumerable: true,
    get: () => require('./lib/undici').loadUndici()[name],
  });
}
