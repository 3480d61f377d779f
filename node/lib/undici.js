'use strict';

// undici, loaded once and only when something asks for it, so a listener-style worker never
// pays for it: its web classes (Request, Response, Headers, FormData) and, where the
// installed undici has them, undici 7's own internal entry points, the ones its fetch()
// uses, which the fetch core takes as shortcuts (fetch.js says which, and why). Below every
// module that needs undici (fetch.js, context.js, json.js, the package's exports), so none
// of them has to require the fetch core to reach it.

const { makeResponseClass, makeRequestClass } = require('./known-body');

let undici = null;

/**
 * undici's web classes. Its fetch modules are loaded on their own when the installed undici
 * has them where undici 7 keeps them: the whole package (dispatchers, the HTTP client and
 * its WebAssembly parser) costs about three times as much at start-up, and a worker needs
 * none of it to serve. The classes are the same objects either way.
 */
function loadUndici() {
  if (undici !== null) return undici;
  try {
    // In the order undici's index.js loads them: a module's WebIDL converters capture
    // the converters of the modules loaded before it.
    const headers = require('undici/lib/web/fetch/headers.js');
    const response = require('undici/lib/web/fetch/response.js');
    const request = require('undici/lib/web/fetch/request.js');
    const { FormData } = require('undici/lib/web/fetch/formdata.js');
    const { Headers } = headers;
    const { Response } = response;
    const { Request } = request;
    if ([Request, Response, Headers, FormData].every((c) => typeof c === 'function')) {
      const fast = internals(headers, response, request);
      undici = { Request, Response, Headers, FormData, fast, internals: fast };
      if (fast !== null) {
        // The package's Response keeps a string or bytes body as it is (lib/known-body.js);
        // the Requests serve() makes read a body in hand directly.
        undici.Response = makeResponseClass(undici, () => undici.fast !== null);
        fast.Request = makeRequestClass(undici);
      }
      return undici;
    }
  } catch {
    // another layout: the package's entry point has them all
  }
  const all = require('undici');
  undici = { Request: all.Request, Response: all.Response, Headers: all.Headers, FormData: all.FormData, fast: null, internals: null };
  return undici;
}

// undici 7's internal entry points, or null when this undici lacks one of them.
function internals(headers, response, request) {
  const { HeadersList } = headers;
  const { getResponseState } = response;
  const { makeRequest, fromInnerRequest, getRequestState } = request;
  let settings;
  let extractBody;
  let webidl;
  let nullBodyStatus;
  let serializeJSON;
  let utf8DecodeBytes;
  try {
    settings = require('undici/lib/web/fetch/util.js').environmentSettingsObject.settingsObject;
    ({ extractBody } = require('undici/lib/web/fetch/body.js'));
    ({ webidl } = require('undici/lib/web/webidl/index.js'));
    ({ nullBodyStatus } = require('undici/lib/web/fetch/constants.js'));
    ({ serializeJavascriptValueToJSONString: serializeJSON } = require('undici/lib/web/infra/index.js'));
    ({ utf8DecodeBytes } = require('undici/lib/encoding/index.js'));
  } catch {
    return null;
  }
  if (![HeadersList, getResponseState, makeRequest, fromInnerRequest, getRequestState, extractBody, serializeJSON,
    utf8DecodeBytes].every((f) => typeof f === 'function') ||
      !settings || typeof HeadersList.prototype.append !== 'function' || !Array.isArray(nullBodyStatus) ||
      !webidl || !webidl.is || typeof webidl.is.BufferSource !== 'function' || !webidl.util ||
      typeof webidl.util.getCopyOfBytesHeldByBufferSource !== 'function' || !webidl.errors ||
      typeof webidl.errors.exception !== 'function') {
    return null;
  }
  return {
    HeadersList, getResponseState, makeRequest, fromInnerRequest, getRequestState, settings, extractBody, webidl,
    nullBodyStatus, serializeJSON, utf8DecodeBytes,
    UndiciResponse: response.Response,
    Request: null, // the class of the Requests serve() makes (lib/known-body.js)
  };
}

/**
 * Whether undici's internal entry points are used where the installed undici has them
 * (the default), or its public constructors and getters only (for tests of that path).
 * Returns whether they are used now.
 */
function useInternals(enabled) {
  const u = loadUndici();
  u.fast = enabled ? u.internals : null;
  return u.fast !== null;
}

module.exports = { loadUndici, useInternals };
