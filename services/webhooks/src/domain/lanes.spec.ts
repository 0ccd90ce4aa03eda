import assert from 'node:assert/strict';
import { isSlowAttempt, shareClaimBudget, type ClaimCandidate, type PerLane } from './lanes.js';

const room = (entries: Record<string, PerLane>) => new Map(Object.entries(entries));
const fast = (merchantId: string, endpointRoom = 10): ClaimCandidate => ({ merchantId, slow: false, room: endpointRoom });
const slow = (merchantId: string, endpointRoom = 10): ClaimCandidate => ({ merchantId, slow: true, room: endpointRoom });

describe('delivery lanes', () => {
  it('calls an attempt slow when it timed out or took the threshold or longer, whatever it answered', () => {
    assert.equal(isSlowAttempt({ error: 'timeout', durationMs: 10 }, 5_000), true);
    assert.equal(isSlowAttempt({ error: null, durationMs: 5_000 }, 5_000), true);
    assert.equal(isSlowAttempt({ error: 'http', durationMs: 6_000 }, 5_000), true);
    assert.equal(isSlowAttempt({ error: null, durationMs: 4_999 }, 5_000), false);
    // A refused connection fails at once: it holds nothing.
    assert.equal(isSlowAttempt({ error: 'connection', durationMs: 3 }, 5_000), false);
  });

  it('shares the budget one delivery at a time round the endpoints, within each endpoint room', () => {
    const take = shareClaimBudget([fast('a', 1), fast('a', 5), fast('b', 5)], {
      total: 7,
      slow: 7,
      merchantRoom: room({ a: { fast: 100, slow: 0 }, b: { fast: 100, slow: 0 } }),
    });
    assert.deepEqual(take, [1, 3, 3]);
  });

  it("stops a merchant at its lane's room and hands what is left to the others", () => {
    const take = shareClaimBudget([fast('b'), fast('b'), fast('b'), fast('a')], {
      total: 100,
      slow: 100,
      merchantRoom: room({ a: { fast: 4, slow: 0 }, b: { fast: 5, slow: 0 } }),
    });
    assert.deepEqual(take, [2, 2, 1, 4]);
  });

  it("counts slow endpoints against the slow lane's room only, so they leave the fast lane's whole", () => {
    const take = shareClaimBudget([slow('b'), slow('b'), fast('b'), slow('a'), fast('a')], {
      total: 100,
      slow: 100,
      merchantRoom: room({ a: { fast: 3, slow: 0 }, b: { fast: 6, slow: 3 } }),
    });
    assert.deepEqual(take, [2, 1, 6, 0, 3]);
  });

  it("keeps the worker's slow share: slow endpoints stop at it while fast ones take the rest of the budget", () => {
    const take = shareClaimBudget([slow('b'), slow('c'), fast('a')], {
      total: 8,
      slow: 2,
      merchantRoom: room({ a: { fast: 100, slow: 100 }, b: { fast: 100, slow: 100 }, c: { fast: 100, slow: 100 } }),
    });
    assert.deepEqual(take, [1, 1, 6]);
  });

  it('takes nothing from a merchant it has no room for', () => {
    assert.deepEqual(shareClaimBudget([fast('a'), slow('a')], { total: 10, slow: 10, merchantRoom: room({ a: { fast: 0, slow: -2 } }) }), [0, 0]);
    assert.deepEqual(shareClaimBudget([fast('unknown')], { total: 10, slow: 10, merchantRoom: room({}) }), [0]);
  });
});
