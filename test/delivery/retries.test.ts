import { expect } from 'chai';
import { claimDue } from '../../src/delivery/sql/queue.js';
import { replayDeadDeliveries } from '../../src/delivery/sql/history.js';
import { freePort } from '../../src/core/db/embedded.js';
import { eventually, startPipeline, testWorker, type Pipeline } from './support.js';

describe('delivery: retries, dead letters and failures of every kind', function () {
  this.timeout(30_000);
  let p: Pipeline;
  before(async () => {
    // Attempt n waits delays[n-1]: 0, 40, 80, 120, 160 ms (± 20 %); a 400 ms time-out.
    p = await startPipeline({ WEBHOOK_RETRY_DELAYS_MS: '0,40,80,120,160', WEBHOOK_TIMEOUT_MS: '400', WEBHOOK_BREAKER_FAILURES: '1000' });
  });
  after(() => p?.close());
  beforeEach(async () => {
    await p.removeSubscriptions();
    await p.writer.query('TRUNCATE shop_master.orders');
    p.receiver.requests.length = 0;
  });

  it('a receiver failing 4 times then answering 200: delivered after 5 attempts, same delivery id each time', async () => {
    p.receiver.behave = (_r, i) => (i < 4 ? { status: 503 } : { status: 200 });
    const wh = await p.subscribe();
    await p.writer.query(`INSERT INTO shop_master.orders VALUES (1, 'new', 1)`);
    const requests = await p.receiver.waitFor(5);
    const [d] = await eventually(
      () => p.delivery(wh),
      (r) => r[0]?.status === 'delivered',
    );
    expect(d).to.include({ status: 'delivered', attempts: 5, http_status: 200, last_error: null });
    expect(d!.attempt_log.map((a: any) => a.http_status)).to.deep.equal([503, 503, 503, 503, 200]);
    expect(d!.attempt_log.map((a: any) => a.error)).to.deep.equal(['HTTP 503', 'HTTP 503', 'HTTP 503', 'HTTP 503', null]);
    expect(new Set(requests.map((r) => r.headers['x-service-delivery'])).size).to.equal(1);
    expect(new Set(requests.map((r) => r.body)).size, 'the same body on every attempt').to.equal(1);
    // The waits follow the schedule (each at least 80 % of its delay).
    const gaps = requests.slice(1).map((r, i) => r.at - requests[i]!.at);
    [40, 80, 120, 160].forEach((delay, i) => expect(gaps[i]).to.be.at.least(delay * 0.8 - 5));
  });

  it('a receiver that always fails: dead after 5 attempts and not retried; a replay delivers it', async () => {
    p.receiver.behave = () => ({ status: 500 });
    const wh = await p.subscribe();
    await p.writer.query(`INSERT INTO shop_master.orders VALUES (2, 'new', 1)`);
    const [dead] = await eventually(
      () => p.delivery(wh),
      (r) => r[0]?.status === 'dead',
    );
    expect(dead).to.include({ attempts: 5, http_status: 500, last_error: 'HTTP 500' });
    await new Promise((r) => setTimeout(r, 400));
    expect(p.receiver.requests).to.have.length(5);
    p.receiver.behave = () => ({ status: 200 });
    expect(await replayDeadDeliveries(p.t.ctx.pool, { webhookId: wh }, new Date())).to.equal(1);
    const [delivered] = await eventually(
      () => p.delivery(wh),
      (r) => r[0]?.status === 'delivered',
    );
    expect(delivered).to.include({ attempts: 1, http_status: 200 });
    expect(p.receiver.requests).to.have.length(6);
    // The history keeps every attempt, before and after the replay.
    expect(delivered!.attempt_log.map((a: any) => [a.attempt, a.http_status])).to.deep.equal([
      [1, 500],
      [2, 500],
      [3, 500],
      [4, 500],
      [5, 500],
      [1, 200],
    ]);
  });

  it('counts non-2xx, a time-out, a refused connection and a 3xx as failures; redirects are not followed', async () => {
    const hanging = await p.newReceiver();
    hanging.behave = () => ({ hang: true });
    const redirecting = await p.newReceiver();
    const target = await p.newReceiver();
    redirecting.behave = () => ({ redirect: `${target.url}/elsewhere` });
    const closedPort = await freePort();
    p.receiver.behave = () => ({ status: 404 });
    const cases = {
      notFound: await p.subscribe({ url: `${p.receiver.url}/hook` }),
      timeout: await p.subscribe({ url: `${hanging.url}/hook` }),
      refused: await p.subscribe({ url: `https://127.0.0.1:${closedPort}/hook` }),
      redirect: await p.subscribe({ url: `${redirecting.url}/hook` }),
    };
    await p.writer.query(`INSERT INTO shop_master.orders VALUES (3, 'new', 1)`);
    const first = async (wh: string) =>
      (
        await eventually(
          () => p.delivery(wh),
          (r) => (r[0]?.attempts ?? 0) >= 1,
          10_000,
        )
      )[0]!;
    const notFound = await first(cases.notFound);
    expect(notFound).to.include({ status: 'retrying', http_status: 404, last_error: 'HTTP 404' });
    const timeout = await first(cases.timeout);
    expect(timeout.http_status).to.equal(null);
    expect(timeout.last_error).to.contain('no answer within 400 ms');
    const refused = await first(cases.refused);
    expect(refused.http_status).to.equal(null);
    expect(refused.last_error).to.contain('ECONNREFUSED');
    const redirect = await first(cases.redirect);
    expect(redirect).to.include({ http_status: 302, last_error: 'HTTP 302' });
    expect(target.requests, 'the redirect was not followed').to.have.length(0);
  });

  it('a delivery whose worker died mid-attempt is attempted again when its lease runs out', async () => {
    // The stream's attempt fails, so the delivery is parked in the retry queue; the pipeline's
    // queue worker steps aside, and we play a worker that claims it and dies.
    p.receiver.behave = (_r, i) => (i === 0 ? { status: 500 } : { status: 200 });
    await p.worker.stopQueue(1000);
    const wh = await p.subscribe();
    await p.writer.query(`INSERT INTO shop_master.orders VALUES (4, 'new', 1)`);
    const claimed = await eventually(
      () =>
        claimDue(p.t.ctx.pool, { now: new Date(), leaseUntil: new Date(Date.now() + 500), limit: 10, perWebhook: 10, inflight: new Map() }),
      (c) => c.length === 1,
    );
    expect(claimed[0]!.webhook_id).to.equal(wh);
    // …and never reports back. A new worker must not touch it before the lease ends, then must.
    const replacement = await testWorker(p.t.ctx);
    replacement.start();
    try {
      await new Promise((r) => setTimeout(r, 250));
      expect(p.receiver.requests).to.have.length(1);
      await p.receiver.waitFor(2, 5000);
      const [d] = await eventually(
        () => p.delivery(wh),
        (r) => r[0]?.status === 'delivered',
      );
      expect(d!.attempts).to.equal(2);
      // The first worker comes back late with a failure: its claim is gone, nothing changes.
      const { recordAttempts } = await import('../../src/delivery/sql/queue.js');
      await recordAttempts(p.t.ctx.pool, [
        {
          deliveryId: d!.id,
          lease: claimed[0]!.lease,
          kind: 'request',
          attempt: 2,
          spent: 2,
          startedAt: new Date(),
          durationMs: 1,
          httpStatus: 500,
          error: 'HTTP 500',
          responseBody: null,
          status: 'retrying',
          nextAttemptAt: new Date(),
          deliveredAt: null,
        },
      ]);
      const [after] = await p.delivery(wh);
      expect(after).to.include({ status: 'delivered', attempts: 2, http_status: 200 });
      expect(after!.attempt_log.map((a: any) => a.http_status)).to.deep.equal([500, 200]);
    } finally {
      await replacement.stop(1000);
    }
  });
});
