'use strict';
// The Node benchmark function on the AfterBurn library, fetch style: an empty body gets a
// greeting, a small body is answered back whole, a large one is streamed back as it arrives
// (so a 100 MiB echo holds only a chunk in memory).
const { serve, Response } = require('../../../node');

const greeting = 'Hello, world!\n';
const wholeBodyMax = 1 << 20;

async function handle(request) {
  const length = Number(request.headers.get('content-length') || 0);
  if (length === 0) return new Response(greeting, { headers: { 'content-type': 'text/plain' } });
  if (length <= wholeBodyMax) {
    return new Response(await request.arrayBuffer(), { headers: { 'content-type': 'text/plain' } });
  }
  return new Response(request.body, {
    headers: { 'content-type': 'text/plain', 'content-length': String(length) },
  });
}

// The floor (floor.js) runs this same handler.
if (require.main === module) serve(handle);
module.exports = { handle };
