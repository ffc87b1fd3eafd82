import { expect } from 'chai';
import { keepReconnecting } from '../../src/db/reconnect.js';

// The reconnect policy of the tailer's replication session and the worker's LISTEN (p-retry).
describe('reconnect: capped, jittered backoff, abortable', () => {
  it('runs the session again after each end, waiting longer each time up to the cap, and stops at once when aborted', async () => {
    const abort = new AbortController();
    const starts: number[] = [];
    const loop = keepReconnecting(
      async () => {
        starts.push(Date.now());
        if (starts.length % 2) throw new TypeError('a bug, not a network error'); // must not end the loop
        // ends without an error (a lost connection): also reconnected
      },
      { signal: abort.signal, minMs: 20, maxMs: 80, healthyMs: 10_000 },
    );
    while (starts.length < 7) await new Promise((r) => setTimeout(r, 10));
    const gaps = starts.slice(1).map((t, i) => t - starts[i]!);
    // 20 · 2^n with jitter in [1, 2), capped at 80: the waits grow, and none is much beyond the cap.
    expect(gaps[0]).to.be.at.least(18);
    expect(gaps.at(-1)!).to.be.at.least(75);
    expect(Math.max(...gaps)).to.be.below(80 + 150); // cap + scheduling slack on a loaded machine
    // Aborted mid-wait: ends without waiting the backoff out, and starts no more sessions.
    const stopAt = Date.now();
    abort.abort();
    await loop;
    expect(Date.now() - stopAt).to.be.below(60);
    const n = starts.length;
    await new Promise((r) => setTimeout(r, 150));
    expect(starts).to.have.length(n);
  });

  it('a session that lasted healthyMs starts the backoff again from the minimum', async () => {
    const abort = new AbortController();
    const starts: number[] = [];
    const loop = keepReconnecting(
      async () => {
        starts.push(Date.now());
        if (starts.length === 4) await new Promise((r) => setTimeout(r, 120)); // a healthy session
        throw new Error('connection lost');
      },
      { signal: abort.signal, minMs: 30, maxMs: 10_000, healthyMs: 100 },
    );
    while (starts.length < 6) await new Promise((r) => setTimeout(r, 5));
    abort.abort();
    await loop;
    const gaps = starts.slice(1).map((t, i) => t - starts[i]!);
    // Before: 30·(1..2), 60·(1..2), 120·(1..2); after the healthy one (≥ 120 ms): back to ~30.
    expect(gaps[2]).to.be.at.least(118);
    expect(gaps[4]).to.be.below(gaps[2]!);
    expect(gaps[4]).to.be.below(30 * 2 + 60);
  });
});
