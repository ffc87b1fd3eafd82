import { expect } from 'chai';
import type { ReceivedRequest } from '../support/receiver.js';
import { eventually, startPipeline, type Pipeline } from './support.js';

// A subscription with a backlog whose endpoint answers fast is given more requests in flight than
// WEBHOOK_ENDPOINT_CONCURRENCY (16), up to WEBHOOK_ENDPOINT_CONCURRENCY_MAX (here 48); one that
// answers slowly is not (delivery/endpoint-limits.ts). Counted at the receiver: the most requests
// it held at once. "Fast" is 300 ms here (100 in production), so that a loaded machine's stall
// cannot make the 15 ms receiver look slow, nor the 600 ms one fast.

/** The most requests the receiver held at once (arrived, not yet answered). */
function mostAtOnce(requests: ReceivedRequest[]): number {
  const edges = requests.flatMap((r) => [
    { at: r.at, d: 1 },
    { at: r.answeredAt ?? Number.POSITIVE_INFINITY, d: -1 },
  ]);
  edges.sort((a, b) => a.at - b.at || a.d - b.d);
  let now = 0;
  let most = 0;
  for (const e of edges) most = Math.max(most, (now += e.d));
  return most;
}

describe('delivery: more requests in flight for a fast endpoint with a backlog', function () {
  this.timeout(120_000);
  let p: Pipeline;
  before(async () => {
    p = await startPipeline(
      {
        WEBHOOK_ENDPOINT_CONCURRENCY: '16',
        WEBHOOK_ENDPOINT_CONCURRENCY_MAX: '48',
        WEBHOOK_TIMEOUT_MS: '5000',
        WEBHOOK_BREAKER_FAILURES: '1000000',
        WEBHOOK_RETRY_DELAYS_MS: '0,8000,8000,8000,8000',
      },
      { fastAnswerMs: 300 },
    );
  });
  after(() => p?.close());

  const answerAfter = (ms: number) => () => ({ status: 200, after: new Promise((resolve) => setTimeout(resolve, ms)) });

  it('answers in 15 ms: more than 16 at once while the backlog lasts, never more than 48; every change once', async () => {
    const fast = await p.newReceiver();
    fast.behave = answerAfter(15);
    await p.subscribe({ url: `${fast.url}/fast` });
    await p.writer.query(`INSERT INTO shop_master.orders SELECT g, 'new', 1 FROM generate_series(1, 4000) g`);
    const got = await fast.waitFor(4000, 90_000);
    const most = mostAtOnce(got);
    console.log(`      at most ${most} requests at once`);
    expect(most).to.be.above(16).and.at.most(48);
    expect(new Set(got.map((r) => JSON.parse(r.body).record.id)).size).to.equal(4000);
  });

  it('the retry queue too: a backlog parked while the receiver failed drains with more than 16 at once', async () => {
    const back = await p.newReceiver();
    let failing = true;
    back.behave = () => (failing ? { status: 503 } : { status: 200, after: new Promise((resolve) => setTimeout(resolve, 15)) });
    const wh = await p.subscribe({ url: `${back.url}/back` });
    await p.writer.query(`INSERT INTO shop_master.orders SELECT g, 'new', 1 FROM generate_series(20001, 23000) g`);
    // Every change failed once: all of them are in the retry queue, none left to the stream.
    await eventually(
      async () =>
        Number(
          (await p.t.ctx.pool.query(`SELECT count(*) FROM walgate.deliveries WHERE webhook_id = $1 AND attempts >= 1`, [wh])).rows[0].count,
        ),
      (n) => n === 3000,
      60_000,
    );
    failing = false;
    const from = back.requests.length;
    await eventually(
      async () =>
        Number(
          (await p.t.ctx.pool.query(`SELECT count(*) FROM walgate.deliveries WHERE webhook_id = $1 AND status = 'delivered'`, [wh])).rows[0]
            .count,
        ),
      (n) => n === 3000,
      90_000,
    );
    const drained = back.requests.slice(from).filter((r) => r.answeredAt !== undefined);
    const most = mostAtOnce(drained);
    console.log(`      the queue: at most ${most} requests at once`);
    expect(most).to.be.above(16).and.at.most(48);
  });

  it('answers in 600 ms: never more than 16 at once', async () => {
    const slow = await p.newReceiver();
    slow.behave = answerAfter(600);
    await p.subscribe({ url: `${slow.url}/slow` });
    await p.writer.query(`INSERT INTO shop_master.orders SELECT g, 'new', 1 FROM generate_series(10001, 10200) g`);
    const got = (await slow.waitFor(200, 60_000)).filter((r) => Number(JSON.parse(r.body).record.id) > 10_000);
    expect(got).to.have.length(200);
    expect(mostAtOnce(got)).to.be.at.most(16).and.at.least(8);
  });
});
