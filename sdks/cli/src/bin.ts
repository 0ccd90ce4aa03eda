#!/usr/bin/env node
import { run } from './main.js';

// `merx products list | head -1`: the reader left, which is no failure of ours.
process.stdout.on('error', (error: NodeJS.ErrnoException) => {
  if (error.code === 'EPIPE') process.exit(0);
  throw error;
});

const code = await run(process.argv.slice(2));
process.exitCode = code;
// A gRPC channel or a keep-alive socket must not hold a finished command open.
setTimeout(() => process.exit(code), 2_000).unref();
