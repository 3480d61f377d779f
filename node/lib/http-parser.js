'use strict';

// Node's llhttp binding as `_http_common` exports it (HTTPParser and its method table), for
// the fetch core (fetch-request.js), which drives the parser directly.
//
// `_http_common` is one of Node's own internal modules, reachable from user code for
// historical reasons only; Node's maintainers have agreed to deprecate that and make it
// internal-only (nodejs/node#58534, PR #58535). So it is used only when it loads cleanly:
// a require that throws (the module is gone) or that emits a DeprecationWarning (the module
// is on its way out) means the fetch style runs on the public http machinery instead
// (fetch-listener.js; fetch-core.js chooses). The warning is caught, not shown: the user
// has nothing to do about it. Other warnings emitted meanwhile are passed on as they were.

let cached; // undefined until the first load: then the parser, or null

/**
 * Loads `_http_common` as described above.
 * @param {(id: string) => any} [load] require, or a stand-in for tests
 * @returns {{HTTPParser: Function, methods: string[]} | null} null when it cannot be used
 */
function loadHTTPParser(load = require) {
  const held = [];
  const emitWarning = process.emitWarning;
  process.emitWarning = function heldWarning(...args) {
    held.push(args);
  };
  let mod = null;
  try {
    mod = load('_http_common');
  } catch {
    mod = null;
  } finally {
    process.emitWarning = emitWarning;
  }
  let deprecated = false;
  for (const args of held) {
    if (isDeprecation(args)) deprecated = true;
    else process.emitWarning(...args);
  }
  if (deprecated || mod === null || typeof mod !== 'object') return null;
  const { HTTPParser, methods } = mod;
  if (typeof HTTPParser !== 'function' || !Array.isArray(methods) || typeof HTTPParser.REQUEST !== 'number' ||
      !['kOnMessageBegin', 'kOnHeaders', 'kOnHeadersComplete', 'kOnBody', 'kOnMessageComplete']
        .every((k) => HTTPParser[k] !== undefined)) {
    return null; // another shape than the one this library drives
  }
  return { HTTPParser, methods };
}

// process.emitWarning(warning, type, code) or (warning, {type, code}), warning a string or
// an Error whose name is the type.
function isDeprecation([warning, typeOrOptions]) {
  const type = typeOrOptions !== null && typeof typeOrOptions === 'object' ? typeOrOptions.type : typeOrOptions;
  return type === 'DeprecationWarning' || (warning instanceof Error && warning.name === 'DeprecationWarning');
}

/** The parser of this process, loaded once; null when the fetch style must do without. */
function httpParser() {
  if (cached === undefined) cached = loadHTTPParser();
  return cached;
}

/** The parser, for the core that cannot run without it. */
function internalParser() {
  const parser = httpParser();
  if (parser === null) throw new Error('afterburn: _http_common is not usable here; use the public-http fetch core');
  return parser;
}

module.exports = { loadHTTPParser, httpParser, internalParser };
