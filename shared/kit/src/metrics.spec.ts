import assert from 'node:assert/strict';
import { metricsRegistry } from './metrics.js';

describe('process metrics', () => {
  it('still report the event loop lag with its percentiles after the sampling interval was widened', async () => {
    const text = await metricsRegistry.metrics();
    for (const name of ['nodejs_eventloop_lag_seconds', 'nodejs_eventloop_lag_p50_seconds', 'nodejs_eventloop_lag_p99_seconds']) {
      const line = new RegExp(`^${name} (\\S+)$`, 'm').exec(text);
      assert.ok(line, `${name} is exported`);
      assert.ok(Number(line[1]) >= 0, `${name} is a lag in seconds: ${line[1]}`);
    }
  });
});
