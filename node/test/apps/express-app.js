'use strict';

// An Express app written for a plain Node server, served unchanged.
const express = require('express');
const { context } = require('afterburn-runtime');

const app = express();
app.use(express.json());

app.get('/hello/:name', (req, res) => {
  res.set('X-Powered', 'afterburn');
  res.json({ hello: req.params.name, query: req.query, requestId: context(req).requestId });
});

app.post('/sum', (req, res) => {
  res.status(201).json({ sum: req.body.numbers.reduce((a, n) => a + n, 0) });
});

app.get('/cookies', (req, res) => {
  res.cookie('a', '1');
  res.cookie('b', '2');
  res.send('two cookies');
});

app.get('/boom', () => {
  throw new Error('express route failed');
});

module.exports = app;
