'use strict';

// Initialisation that fails: the worker must exit non-zero with the reason on stderr (§9.1).
throw new Error('cannot reach the model store');
