import { expect } from 'chai';
import { insertSubscription } from '../support/subscriptions.js';
import { eventually, startPipeline, type Pipeline } from './support.js';

// The breaker is per (project, environment, exact URL). Measured before: keyed by origin, a
// failing path paused every other path of the host and every tenant there for the whole cool-down.
describe('delivery: breakers per project, environment and exact URL', function () {
  this.timeout(30_000);
  let p: Pipeline;
  before(async () => {
    // A cool-down far longer than the test: anything that waits behind the open breaker fails it.
    // A generous time-out: on a loaded machine a slow answer must not count as the healthy endpoint's failure.
    p = await startPipeline({
      WEBHOOK_RETRY_DELAYS_MS: '0,100,100,100,100,100',
      WEBHOOK_BREAKER_FAILURES: '2',
      WEBHOOK_BREAKER_COOLDOWN_MS: '60000',
      WEBHOOK_TIMEOUT_MS: '8000',
    });
    await p.t.provision({ projectId: 'other', name: 'master' });
    await p.writer.query('CREATE TABLE other_master.orders (id int PRIMARY KEY, status text, amount numeric(12,2))');
  });
  after(() => p?.close());

  it('a failing URL delays neither another URL on the same host nor another tenant’s subscription to the same URL', async () => {
    // /bad fails for project shop only (the body names the project).
    p.receiver.behave = (req) => ({ status: req.path === '/bad' && JSON.parse(req.body).project_id === 'shop' ? 500 : 200 });
    const bad = await p.subscribe({ url: `${p.receiver.url}/bad` });
    const good = await p.subscribe({ url: `${p.receiver.url}/good` });
    const otherTenant = await insertSubscription(p.t.ctx, {
      projectId: 'other',
      environment: 'master',
      schema: 'other_master',
      table: 'orders',
      url: `${p.receiver.url}/bad`,
    });
    // Open shop's /bad breaker first.
    await p.writer.query(`INSERT INTO shop_master.orders VALUES (1, 'new', 1), (2, 'new', 1)`);
    const [row] = await eventually(
      async () => (await p.t.ctx.pool.query('SELECT project_id, url, opened_until FROM walgate.endpoint_breakers')).rows,
      (r) => r[0]?.opened_until != null,
    );
    expect(row).to.include({ project_id: 'shop', url: `${p.receiver.url}/bad` });
    const badRequestsWhenOpened = p.receiver.requests.filter((r) => r.path === '/bad').length;
    // Now every endpoint gets changes: the other two are delivered at once, well inside the cool-down.
    const start = Date.now();
    await p.writer.query(`INSERT INTO shop_master.orders SELECT g, 'new', 1 FROM generate_series(3, 12) g`);
    await p.writer.query(`INSERT INTO other_master.orders SELECT g, 'new', 1 FROM generate_series(1, 10) g`);
    await eventually(
      () => p.delivery(good),
      (r) => r.filter((d) => d.status === 'delivered').length === 12,
      10_000,
    );
    await eventually(
      () => p.delivery(otherTenant),
      (r) => r.filter((d) => d.status === 'delivered').length === 10,
      10_000,
    );
    expect(Date.now() - start).to.be.below(10_000); // the cool-down is 60 s
    // …while shop's /bad waits behind its open breaker: not one more request reached it.
    const shopBad = p.receiver.requests.filter((r) => r.path === '/bad' && JSON.parse(r.body).project_id === 'shop');
    expect(shopBad).to.have.length(badRequestsWhenOpened);
    const waiting = await p.delivery(bad);
    expect(waiting.filter((d) => d.status === 'delivered')).to.have.length(0);
    const { rows } = await p.t.ctx.pool.query('SELECT count(*)::int AS n FROM walgate.endpoint_breakers WHERE opened_until IS NOT NULL');
    expect(rows[0].n).to.equal(1);
  });
});

describe('delivery: nothing goes through an open breaker until its probe', function () {
  this.timeout(30_000);
  let p: Pipeline;
  const COOLDOWN = 1500;
  before(async () => {
    // Retries every 400 ms: attempts come due while the breaker is open (they wait: no request, no attempt spent) and
    // after it, where the first is the probe; the schedule is long enough to outlast the cool-down.
    p = await startPipeline(
      {
        WEBHOOK_RETRY_DELAYS_MS: '0,400,400,400,400,400,400,400',
        WEBHOOK_BREAKER_FAILURES: '5',
        WEBHOOK_BREAKER_COOLDOWN_MS: String(COOLDOWN),
      },
      { perWebhook: 8 },
    );
  });
  after(() => p?.close());

  it('with 8 concurrent deliveries failing, no request starts between the opening failure and the probe; the probe’s success closes it', async () => {
    // The first 8 requests are held until all 8 are in flight, then all fail; later ones succeed.
    let releaseAll!: () => void;
    const allIn = new Promise<void>((r) => (releaseAll = r));
    p.receiver.behave = (_req, i) => {
      if (i === 7) releaseAll();
      return i < 8 ? { status: 500, after: allIn } : { status: 200 };
    };
    const wh = await p.subscribe();
    await p.writer.query(`INSERT INTO shop_master.orders SELECT g, 'new', 1 FROM generate_series(1, 8) g`);
    await eventually(
      () => p.delivery(wh),
      (r) => r.length === 8 && r.every((d) => d.status === 'delivered'),
      15_000,
    );
    const reqs = p.receiver.requests;
    const failing = reqs.slice(0, 8);
    const openingFailure = failing.map((r) => r.answeredAt!).sort((a, b) => a - b)[4]!; // the fifth consecutive failure
    const probe = reqs[8]!;
    const after = reqs.slice(9);
    const timeline = reqs.map((r) => `${r.at - failing[0]!.at}→${(r.answeredAt ?? NaN) - failing[0]!.at}`).join(' ');
    // Nothing between the opening failure and the probe, which comes after the cool-down…
    expect(
      reqs.filter((r) => r.at > openingFailure && r.at < probe.at),
      timeline,
    ).to.have.length(0);
    expect(probe.at - openingFailure, timeline).to.be.at.least(COOLDOWN);
    // …and nothing until the probe has answered; then the other 7 deliveries follow.
    expect(
      after.every((r) => r.at >= probe.answeredAt!),
      timeline,
    ).to.equal(true);
    expect(reqs, timeline).to.have.length(16);
    // The attempts that came due while it was open are in the log as waits, one request per attempt made.
    const log = (await p.delivery(wh)).flatMap((d) => d.attempt_log ?? []);
    expect(log.filter((a: any) => a.kind === 'wait' && a.http_status === null).length, timeline).to.be.at.least(1);
    expect(log.filter((a: any) => a.kind === 'request').length, timeline).to.equal(16);
    const { rows } = await p.t.ctx.pool.query('SELECT consecutive_failures, opened_until FROM walgate.endpoint_breakers');
    expect(rows[0]).to.deep.equal({ consecutive_failures: 0, opened_until: null });
  });
});
