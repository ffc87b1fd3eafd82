#!/usr/bin/env node
// The package's `bin`: the compiled CLI lives in dist/ (built by `npm ci` through `prepare`).
import '../dist/src/cli/main.js';
