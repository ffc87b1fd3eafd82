import { expect } from 'chai';
import { HttpClient } from '../support/http.js';
import { eventually, startPipeline, type Pipeline } from './support.js';

// Receiver answers as Standard Webhooks defines them, end to end: real HTTPS receiver, real worker.
describe('delivery: 410 Gone disables the subscription', function () {
  this.timeout(30_000);
  let p: Pipeline;
  before(async () => {
    p = await startPipeline({ WEBHOOK_RETRY_DELAYS_MS: '0,50,50,50' });
  });
  after(() => p?.close());

  it('after that one attempt: inactive with reason and time in its view, a log line, a metric; no more requests', async () => {
    p.receiver.behave = () => ({ status: 410 });
    const wh = await p.subscribe();
    await p.writer.query(`INSERT INTO shop_master.orders VALUES (1, 'new', 1)`);
    const [d] = await eventually(
      () => p.delivery(wh),
      (r) => r[0]?.status === 'dead',
    );
    expect(d).to.include({ attempts: 1, http_status: 410 });
    expect(p.receiver.requests).to.have.length(1);

    const api = new HttpClient(p.t.url, {
      authorization: `Bearer ${await p.t.managementToken('shop')}`,
      'x-project-id': 'shop',
      environment: 'master',
    });
    const res = await api.get(`/api/rest/_webhooks/${wh}`);
    expect(res.status).to.equal(200);
    expect(res.body.webhook).to.include({ active: false, disabledReason: 'the receiver answered 410 Gone' });
    expect(Date.parse(res.body.webhook.disabledAt)).to.be.closeTo(Date.now(), 15_000);
    expect(p.t.logs.text).to.match(/subscription disabled by its receiver/);
    expect(await p.t.ctx.metrics.text()).to.match(/^walgate_webhooks_disabled_total 1$/m);

    // Later changes are not delivered (nor even queued): the subscription is off from that commit.
    await p.writer.query(`INSERT INTO shop_master.orders VALUES (2, 'new', 1)`);
    await new Promise((r) => setTimeout(r, 500));
    expect(p.receiver.requests).to.have.length(1);
    expect(await p.delivery(wh)).to.have.length(1);

    // Re-activated by hand: the reason goes, deliveries resume.
    p.receiver.behave = () => ({ status: 200 });
    const again = await api.patch(`/api/rest/_webhooks/${wh}`, { active: true });
    expect(again.status).to.equal(200);
    expect(again.body.webhook).to.include({ active: true, disabledReason: null, disabledAt: null });
    await p.writer.query(`INSERT INTO shop_master.orders VALUES (3, 'new', 1)`);
    await p.receiver.waitFor(2);
  });
});

describe('delivery: 429 / 503 with Retry-After delay the next attempt', function () {
  this.timeout(30_000);
  let p: Pipeline;
  before(async () => {
    // The schedule alone would retry after 50 ms.
    p = await startPipeline({ WEBHOOK_RETRY_DELAYS_MS: '0,50,50,50', WEBHOOK_BREAKER_FAILURES: '100' });
  });
  after(() => p?.close());

  for (const [status, retryAfter] of [
    [503, () => '2'],
    [429, () => new Date(Date.now() + 3000).toUTCString()], // HTTP date, whole seconds: at least 2 s ahead
  ] as const) {
    it(`${status} with Retry-After ${status === 503 ? 'in seconds' : 'as an HTTP date'}: the next attempt waits at least that, and the attempt counts`, async () => {
      const path = `/${status}`;
      const mine = () => p.receiver.requests.filter((r) => r.path === path);
      // The first request to this subscription is refused with Retry-After (the other test's subscription still takes changes).
      p.receiver.behave = (req) =>
        req.path === path && mine().length === 1 ? { status, headers: { 'retry-after': retryAfter() } } : { status: 200 };
      const wh = await p.subscribe({ url: `${p.receiver.url}${path}` });
      await p.writer.query(`INSERT INTO shop_master.orders VALUES (${status}, 'new', 1)`);
      const [d] = await eventually(
        () => p.delivery(wh),
        (r) => r[0]?.status === 'delivered',
        10_000,
      );
      const [first, second] = mine();
      expect(second!.at - first!.answeredAt!).to.be.at.least(1900);
      expect(d).to.include({ attempts: 2, http_status: 200 });
      expect(d!.attempt_log.map((a: { http_status: number }) => a.http_status)).to.deep.equal([status, 200]);
    });
  }
});
