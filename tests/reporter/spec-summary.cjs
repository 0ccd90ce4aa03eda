'use strict';
// Mocha's spec output for people, plus the counts in a JSON file for the runner's closing line.
const { writeFileSync } = require('node:fs');
const Mocha = require('mocha');

class SpecWithSummary extends Mocha.reporters.Spec {
  constructor(runner, options) {
    super(runner, options);
    runner.once('end', () => {
      const file = process.env.MERX_TEST_SUMMARY_FILE;
      if (file) writeFileSync(file, JSON.stringify(this.stats));
    });
  }
}

module.exports = SpecWithSummary;
