'use strict';
// Mocha's spec output for people, plus the counts and the failing tests' titles in a JSON file for
// the runner's closing lines: CI often keeps only the tail of the log, so the names must be there.
const { writeFileSync } = require('node:fs');
const path = require('node:path');
const Mocha = require('mocha');

class SpecWithSummary extends Mocha.reporters.Spec {
  constructor(runner, options) {
    super(runner, options);
    const failed = [];
    runner.on('fail', (test, error) => {
      const firstLine = String((error && error.message) || error)
        .split('\n')[0]
        .slice(0, 300);
      failed.push(`${test.fullTitle()} (${test.file ? path.basename(test.file) : 'hook'}): ${firstLine}`);
    });
    runner.once('end', () => {
      const file = process.env.MERX_TEST_SUMMARY_FILE;
      if (file) writeFileSync(file, JSON.stringify({ ...this.stats, failed }));
    });
  }
}

module.exports = SpecWithSummary;
