#!/usr/bin/env node
// The `merx` executable. A committed file, not the build's output, so `npm ci` links it into
// node_modules/.bin before the first build (npm links no bin whose file is missing).
import '../dist/src/bin.js';
