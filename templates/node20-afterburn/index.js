'use strict';

// The entry program of the node20-afterburn template. The watchdog runs
//     ./node_modules/.bin/afterburn --shape openfaas index.js
// in each worker: the launcher moves the protocol off stdout first, then loads this file
// (and so the function) once, and serves it through afterburn-runtime's OpenFaaS adapter
// until the watchdog stops the worker. function/handler.js is written for OpenFaaS's node20
// template (github.com/openfaas/templates, MIT): async (event, context), answering through
// context.status(n).headers({...}).succeed(body) or .fail(err), or by returning a value.
// It runs unchanged; nothing of the template's Express entry is needed.

module.exports = require('./function/handler');
