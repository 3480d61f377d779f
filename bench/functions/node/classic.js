'use strict';
// The Node function of the "fork per request" baseline: a classic-watchdog function that reads
// the request body on stdin and writes the response body to stdout, started once per request.
const fs = require('node:fs');

const body = fs.readFileSync(0);
process.stdout.write(body.length ? body : 'Hello, world!\n');
