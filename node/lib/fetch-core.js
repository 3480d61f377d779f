'use strict';

// Which core serves a fetch-style handler: fetch-connection.js, which drives llhttp through
// Node's internal `_http_common`, where that module loads cleanly; otherwise
// fetch-listener.js, the same contract on Node's public http machinery (http-parser.js says
// why and when).

const { httpParser } = require('./http-parser');

/**
 * @param {() => object | null} [parser] the parser loader (http-parser.js), for tests
 * @returns {typeof import('./fetch-connection').FetchConnection |
 *   typeof import('./fetch-listener').FetchListenerConnection}
 */
function fetchCore(parser = httpParser) {
  if (parser() !== null) return require('./fetch-connection').FetchConnection;
  return require('./fetch-listener').FetchListenerConnection;
}

module.exports = { fetchCore };
