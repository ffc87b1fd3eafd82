import { expect } from 'chai';
import { keepReconnecting } from '../../src/core/db/reconnect.js';

// The reconnect policy of the tailer's replication session and the worker's LISTEN (p-retry).
// Timers never fire early, so lower bounds are exact; upper bounds are set far from the figure a
// broken policy would give, so that a loaded machine cannot make them flake.
describe('reconnect: capped, jittered backoff, abortable', () => {
  const gapsOf = (starts: number[]) => starts.slice(1).map((t, i) => t - starts[i]!);

  it('runs the session again after each end (an error, a bug, or none), waiting longer each time, up to the cap', async () => {
    const abort = new AbortController();
    const starts: number[] = [];
    const loop = keepReconnecting(
      async () => {
        starts.push(Date.now());
        if (starts.length % 2) throw new TypeError('a bug, not a network error'); // must not end the loop
        // ends without an error (a lost connection): also reconnected
      },
      { signal: abort.signal, minMs: 10, maxMs: 40, healthyMs: 60_000 },
    );
    while (starts.length < 9) await new Promise((r) => setTimeout(r, 10));
    abort.abort();
    await loop;
    const gaps = gapsOf(starts);
    expect(gaps[0]).to.be.at.least(9); // 10 · [1, 2)
    expect(gaps[1]).to.be.at.least(19); // 20 · [1, 2)
    expect(gaps.slice(2).every((g) => g >= 39)).to.equal(true); // capped at 40: the wait reached the cap
    // Uncapped, the last wait would be 10 · 2^7 · [1, 2) ≥ 1,280 ms.
    expect(Math.max(...gaps)).to.be.below(1000);
  });

  it('stops at once when aborted mid-backoff, and starts no more sessions', async () => {
    const abort = new AbortController();
    let starts = 0;
    const loop = keepReconnecting(
      async () => {
        starts++;
        throw new Error('connection refused');
      },
      { signal: abort.signal, minMs: 10_000, maxMs: 10_000 },
    );
    await new Promise((r) => setTimeout(r, 50));
    const stopAt = Date.now();
    abort.abort();
    await loop;
    expect(Date.now() - stopAt).to.be.below(5000); // the backoff was 10–20 s
    expect(starts).to.equal(1);
  });

  it('a session that lasted healthyMs starts the backoff again from the minimum', async () => {
    const abort = new AbortController();
    const starts: number[] = [];
    const loop = keepReconnecting(
      async () => {
        starts.push(Date.now());
        if (starts.length === 4) await new Promise((r) => setTimeout(r, 600)); // a healthy session
        throw new Error('connection lost');
      },
      { signal: abort.signal, minMs: 100, maxMs: 60_000, healthyMs: 500 },
    );
    while (starts.length < 6) await new Promise((r) => setTimeout(r, 10));
    abort.abort();
    await loop;
    const gaps = gapsOf(starts);
    // Before: 100, 200, 400 ms (· [1, 2)); after the healthy session, 100 · [1, 2) again.
    expect(gaps[2]).to.be.at.least(399);
    expect(gaps[4]).to.be.at.least(99);
    expect(gaps[4]).to.be.below(800); // without the reset: 800 · [1, 2)
  });
});
