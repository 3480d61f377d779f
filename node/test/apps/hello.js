'use strict';

// The smallest fetch-style worker: every request gets `hello` (one-lane-costs.test.js).
const { serve, Response } = require('afterburn-runtime');

serve(() => new Response('hello'));
