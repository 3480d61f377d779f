'use strict';

module.exports = {
  testEnvironment: 'node',
  testMatch: ['<rootDir>/test/**/*.test.js'],
  reporters: ['default', '<rootDir>/test/support/summary-reporter.js'],
  // The tests start real watchdogs and workers; a few seconds each at most.
  testTimeout: 20000,
};
