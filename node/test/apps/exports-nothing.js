'use strict';

// Neither serves nor exports anything servable.
module.exports = { answer: 42 };
