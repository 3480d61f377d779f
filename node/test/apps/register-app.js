'use strict';

// For `node --require afterburn-runtime/register`: prints at import time, then serves.
const fs = require('node:fs');
const { serve, Response } = require('afterburn-runtime');

console.log('register import-time console.log');
fs.writeSync(1, 'register import-time raw fd 1\n');

serve(async (request) => {
  console.log('register in-handler console.log');
  return new Response(`${request.method} ${new URL(request.url).pathname} ${await request.text()}`);
});
