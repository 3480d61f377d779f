'use strict';

// Ends the run with one plain line CI can read: "N passed, N failed". Written as the
// process exits, so that it comes after Jest's own summary.

const fs = require('node:fs');

class SummaryReporter {
  onRunComplete(_contexts, results) {
    const failed = results.numFailedTests + results.numRuntimeErrorTestSuites;
    const line = `${results.numPassedTests} passed, ${failed} failed\n`;
    process.once('exit', () => fs.writeSync(2, line));
  }
}

module.exports = SummaryReporter;
