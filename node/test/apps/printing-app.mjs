// Prints at import time and in its handler, through console.log and a raw write to fd 1,
// and leaves a rejected promise behind: none of it may reach the response pipe
// (PROTOCOL.md §2.4), and the rejection must not end the worker. An ESM module with a
// default { fetch } export, answering with Node's global Response.
import fs from 'node:fs';

console.log('import-time console.log');
fs.writeSync(1, 'import-time raw fd 1\n');

Promise.reject(new Error('stray rejection outside any request'));

export default {
  async fetch(request, ctx) {
    console.log('in-handler console.log');
    fs.writeSync(1, 'in-handler raw fd 1\n');
    const body = JSON.stringify({ id: ctx.requestId, path: new URL(request.url).pathname, method: request.method });
    return new Response(body, { headers: { 'content-type': 'application/json' } });
  },
};
