'use strict';

// The entry program of the node-afterburn template. The watchdog runs
//     ./node_modules/.bin/afterburn index.js
// in each worker: the launcher moves the protocol off stdout first, then loads this file
// (and so the function) and serves what it exports until the watchdog stops the worker.
// A function (request, ctx) => Response is served fetch-style; an Express app or
// { fetch } object exported from function/handler.js works as well.

module.exports = require('./function/handler');
