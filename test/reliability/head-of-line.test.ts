import { setTimeout as sleep } from 'node:timers/promises';
import { expect } from 'chai';
import { percentile } from '../../scripts/bench/stats.js';
import { startPipeline, type Pipeline } from '../delivery/support.js';

// One subscriber that hangs past the time-out and one that answers 500 share the worker with a
// healthy one. Each endpoint has its own slots (per-subscription concurrency), so the healthy
// subscriber's commit → receipt latency must stay where it is without them: p99 within 2× of a
// run without the bad subscribers (plus 50 ms, what one scheduling hiccup costs on a loaded CI).
describe('reliability: no head-of-line blocking', function () {
  this.timeout(90_000);
  let p: Pipeline;
  before(async () => {
    p = await startPipeline(
      { WEBHOOK_TIMEOUT_MS: '2000', WEBHOOK_RETRY_DELAYS_MS: '0,50,50,50,50,50,50,50', WEBHOOK_BREAKER_FAILURES: '100000' },
      { perWebhook: 4, concurrency: 12 },
    );
  });
  after(() => p?.close());

  /** Writes `rows` rows at a steady pace; returns the healthy receiver's commit → receipt latencies. */
  async function steadyRun(first: number, rows: number): Promise<number[]> {
    const seen = p.receiver.requests.length;
    for (let i = 0; i < rows; i += 5) {
      await p.writer.query(`INSERT INTO shop_master.orders SELECT g, 'new', 1 FROM generate_series($1::int, $2::int) g`, [
        first + i,
        first + i + 4,
      ]);
      await sleep(25);
    }
    await p.receiver.waitFor(seen + rows, 30_000);
    return p.receiver.requests.slice(seen, seen + rows).map((r) => r.at - Date.parse(JSON.parse(r.body).timestamp));
  }

  it("the healthy subscriber's p99 stays within 2× of a run without the bad ones", async () => {
    p.receiver.behave = () => ({ status: 200 });
    await p.subscribe({ url: `${p.receiver.url}/healthy` });
    await steadyRun(1, 20); // warm-up: connections, TLS sessions
    // Long enough (about 4 s at this pace) for the bad subscribers' due deliveries to pile up well
    // past what one claim looks at: the healthy one's must still be found behind them.
    const alone = await steadyRun(1000, 800);

    const hanging = await p.newReceiver();
    hanging.behave = () => ({ hang: true });
    const failing = await p.newReceiver();
    failing.behave = () => ({ status: 500 });
    await p.subscribe({ url: `${hanging.url}/hang` });
    await p.subscribe({ url: `${failing.url}/fail` });
    const crowded = await steadyRun(2000, 800);

    const [base, bad] = [percentile(alone, 99), percentile(crowded, 99)];
    console.log(`      healthy p99: ${base} ms alone, ${bad} ms beside a hanging and a failing subscriber`);
    expect(hanging.requests.length, 'the hanging subscriber was tried').to.be.above(0);
    expect(failing.requests.length, 'the failing subscriber was retried').to.be.above(10);
    expect(bad).to.be.at.most(2 * base + 50);
  });
});
