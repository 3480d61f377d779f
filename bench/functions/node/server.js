'use strict';
// Node's own minimal HTTP server, the upstream of the "HTTP proxy mode" baseline, on
// 127.0.0.1:$PORT (keep-alive and TCP_NODELAY are Node's defaults).
const http = require('node:http');

const greeting = Buffer.from('Hello, world!\n');
const server = http.createServer((req, res) => {
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', () => {
    const body = chunks.length ? Buffer.concat(chunks) : greeting;
    res.writeHead(200, { 'Content-Type': 'text/plain', 'Content-Length': body.length });
    res.end(body);
  });
});
server.keepAliveTimeout = 60_000;
server.listen(Number(process.env.PORT || 8080), '127.0.0.1', () => {
  const a = server.address();
  process.stderr.write(`server: listening on ${a.address}:${a.port}\n`);
});
