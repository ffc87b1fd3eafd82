import { expect } from 'chai';
import { systemLookup, type HostLookup } from '../../src/core/net/address-policy.js';
import { HttpClient } from '../support/http.js';
import { eventually, startPipeline, type Pipeline } from './support.js';

describe('delivery: circuit breaker per endpoint', function () {
  this.timeout(30_000);
  let p: Pipeline;
  const COOLDOWN = 1500;
  before(async () => {
    // Retries far apart, so that during the test only first attempts and the probe happen.
    p = await startPipeline(
      { WEBHOOK_RETRY_DELAYS_MS: '0,4000,4000,4000,4000', WEBHOOK_BREAKER_FAILURES: '5', WEBHOOK_BREAKER_COOLDOWN_MS: String(COOLDOWN) },
      { perWebhook: 1 },
    );
  });
  after(() => p?.close());

  it('opens after 5 consecutive failures: nothing is sent during the cool-down, deliveries due meanwhile wait without spending an attempt; then one probe, then normal flow', async () => {
    p.receiver.behave = () => ({ status: 500 });
    const wh = await p.subscribe();
    await p.writer.query(`INSERT INTO shop_master.orders SELECT g, 'new', 1 FROM generate_series(1, 8) g`);
    await p.receiver.waitFor(5);
    const openedAt = Date.now();
    const { rows } = await eventually(
      () => p.t.ctx.pool.query('SELECT consecutive_failures, opened_until FROM walgate.endpoint_breakers'),
      (r) => r.rows[0]?.opened_until != null,
    );
    expect(rows).to.have.length(1);
    expect(rows[0].consecutive_failures).to.equal(5);
    expect(rows[0].opened_until.getTime()).to.be.above(openedAt);
    p.receiver.behave = () => ({ status: 200 });
    // During the cool-down no request reaches the endpoint; the 3 first attempts that came due
    // waited: logged as waits (no status, "breaker open"), with no attempt spent.
    await new Promise((r) => setTimeout(r, COOLDOWN - 400));
    expect(p.receiver.requests).to.have.length(5);
    const waited = (await p.delivery(wh)).filter((d) => d.attempt_log?.[0]?.kind === 'wait');
    expect(waited).to.have.length(3);
    for (const d of waited) {
      expect(d).to.include({ status: 'pending', attempts: 0, last_error: 'breaker open', http_status: null });
      expect(d.attempt_log[0]).to.include({ http_status: null, duration_ms: 0, attempt: 1, error: 'breaker open' });
    }
    // After it: one probe goes first (the first delivery due after the cool-down); its success
    // closes the breaker and the rest follow at once (their retry slots are brought forward).
    await p.receiver.waitFor(6, 10_000);
    expect(p.receiver.requests[5]!.at - openedAt).to.be.at.least(COOLDOWN - 400);
    const done = await eventually(
      () => p.delivery(wh),
      (r) => r.filter((d) => d.status === 'delivered').length === 8,
      15_000,
    );
    // The waiters were delivered at their first real request.
    for (const d of done.filter((x) => x.attempt_log[0].kind === 'wait')) {
      expect(d.attempts).to.equal(1);
      expect(d.attempt_log.at(-1)).to.include({ kind: 'request', error: null, attempt: 1 });
    }
    expect(p.receiver.requests).to.have.length(13); // 5 failures, then one request per delivery
    const after = await p.t.ctx.pool.query('SELECT consecutive_failures, opened_until FROM walgate.endpoint_breakers');
    expect(after.rows[0]).to.deep.equal({ consecutive_failures: 0, opened_until: null });
    // The worker knows it closed too (the metric and the health view read this).
    expect(p.worker.breakerStates().find((b) => b.url === `${p.receiver.url}/hook`)?.state ?? 'closed').to.equal('closed');
  });
});

describe('delivery: the breaker pauses, then resumes (the seed), and never spends attempts', function () {
  this.timeout(60_000);
  let p: Pipeline;
  const COOLDOWN = 4000;
  before(async () => {
    // The reproduction: retries 300 ms apart, a 4 s cool-down. Under the old rule every
    // one of the eight was dead (its slots skipped) before the breaker closed.
    p = await startPipeline({
      WEBHOOK_RETRY_DELAYS_MS: '0,300,600,900,1200',
      WEBHOOK_BREAKER_FAILURES: '5',
      WEBHOOK_BREAKER_COOLDOWN_MS: String(COOLDOWN),
    });
  });
  after(() => p?.close());

  it('eight changes, a receiver failing until 2.5 s after the breaker opened: all eight delivered after the cool-down, each with at most 5 requests, none during it', async () => {
    let failing = true;
    const acknowledged = new Set<string>();
    p.receiver.behave = (req) => {
      if (failing) return { status: 500 };
      acknowledged.add(req.headers['x-service-delivery']!);
      return { status: 200 };
    };
    const wh = await p.subscribe();
    await p.writer.query(`INSERT INTO shop_master.orders SELECT g, 'new', 1 FROM generate_series(1, 8) g`);
    const { rows } = await eventually(
      () => p.t.ctx.pool.query('SELECT opened_until FROM walgate.endpoint_breakers'),
      (r) => r.rows[0]?.opened_until != null,
    );
    const openUntil = (rows[0].opened_until as Date).getTime();
    const openedAt = openUntil - COOLDOWN;
    setTimeout(() => (failing = false), Math.max(0, openedAt + 2500 - Date.now()));
    const done = await eventually(
      () => p.delivery(wh),
      (r) => r.length === 8 && r.every((d) => d.status === 'delivered'),
      30_000,
    );
    // No request while the breaker was open (a little slack for the clocks of two processes: none).
    const during = p.receiver.requests.filter((r) => r.at > openedAt + 50 && r.at < openUntil - 50);
    expect(during, 'requests during the cool-down').to.have.length(0);
    for (const d of done) {
      const requests = d.attempt_log.filter((a: any) => a.kind === 'request');
      expect(requests.length, `requests of ${d.event_id}`).to.be.within(1, 5);
      expect(d.attempts).to.equal(requests.length);
    }
    // Every change arrived, each event id at least once.
    expect(acknowledged.size).to.equal(8);
  });
});

describe('delivery: a receiver failing forever — every delivery ends, within the bound', function () {
  this.timeout(60_000);
  let p: Pipeline;
  const COOLDOWN = 1500;
  const DELAYS = [0, 200, 400, 600, 800];
  // The bound: the schedule's span plus two cool-downs.
  const BOUND = DELAYS.reduce((a, b) => a + b) + 2 * COOLDOWN;
  before(async () => {
    p = await startPipeline({
      WEBHOOK_RETRY_DELAYS_MS: DELAYS.join(','),
      WEBHOOK_BREAKER_FAILURES: '5',
      WEBHOOK_BREAKER_COOLDOWN_MS: String(COOLDOWN),
    });
  });
  after(() => p?.close());

  it('each delivery is dead after 5 failed requests or, held by the breaker, past its bound with "breaker open"; the log tells requests from waits', async () => {
    p.receiver.behave = () => ({ status: 500 });
    const wh = await p.subscribe();
    const started = Date.now();
    await p.writer.query(`INSERT INTO shop_master.orders SELECT g, 'new', 1 FROM generate_series(1, 12) g`);
    const done = await eventually(
      () => p.delivery(wh),
      (r) => r.length === 12 && r.every((d) => d.status === 'dead'),
      BOUND + 20_000,
    );
    expect(Date.now() - started).to.be.below(BOUND + 15_000);
    let waitedDead = 0;
    for (const d of done) {
      const requests = d.attempt_log?.filter((a: any) => a.kind === 'request') ?? [];
      const waits = d.attempt_log?.filter((a: any) => a.kind === 'wait') ?? [];
      expect(requests.length).to.be.at.most(5);
      expect(d.attempts).to.equal(requests.length);
      for (const w of waits) expect(w).to.include({ http_status: null, duration_ms: 0, error: 'breaker open' });
      for (const r of requests) expect(r.http_status).to.equal(500);
      if (requests.length < 5) {
        // Ended by the bound, not by spent attempts.
        expect(d.last_error).to.equal('breaker open');
        expect(waits.length).to.be.at.least(1);
        waitedDead++;
      }
    }
    // The breaker held some of them: their attempts were not spent by it.
    expect(waitedDead).to.be.at.least(1);
    const pending = await p.t.ctx.pool.query(`SELECT count(*)::int AS n FROM walgate.deliveries WHERE status IN ('pending', 'retrying')`);
    expect(pending.rows[0].n).to.equal(0);
  });
});

describe('delivery: a slow and a failing subscriber do not hold up a healthy one', function () {
  this.timeout(30_000);
  let p: Pipeline;
  before(async () => {
    p = await startPipeline(
      { WEBHOOK_TIMEOUT_MS: '3000', WEBHOOK_RETRY_DELAYS_MS: '0,100,100,100,100', WEBHOOK_BREAKER_FAILURES: '1000' },
      { perWebhook: 4, concurrency: 16 },
    );
  });
  after(() => p?.close());

  it('delivers to the healthy endpoint while the others hang or fail', async () => {
    const hanging = await p.newReceiver();
    hanging.behave = () => ({ hang: true });
    const failing = await p.newReceiver();
    failing.behave = () => ({ status: 500 });
    p.receiver.behave = () => ({ status: 200 });
    await p.subscribe({ url: `${hanging.url}/h` });
    await p.subscribe({ url: `${failing.url}/h` });
    const healthy = await p.subscribe({ url: `${p.receiver.url}/h` });
    const start = Date.now();
    await p.writer.query(`INSERT INTO shop_master.orders SELECT g, 'new', 1 FROM generate_series(1, 40) g`);
    await p.receiver.waitFor(40, 10_000);
    const elapsed = Date.now() - start;
    // 40 deliveries to the healthy endpoint, all before the hanging ones' first time-out (3 s).
    expect(elapsed).to.be.below(2500);
    expect(hanging.requests.length).to.be.at.most(4);
    const delivered = await eventually(
      () => p.delivery(healthy),
      (r) => r.filter((d) => d.status === 'delivered').length === 40,
    );
    expect(delivered).to.have.length(40);
  });
});

describe('delivery: the SSRF guard checks the address actually connected', function () {
  this.timeout(30_000);
  let p: Pipeline;
  // A resolver the test controls: a name that is public when the subscription is checked and
  // private when the delivery connects (DNS rebinding). Other names resolve as usual.
  const names = new Map<string, string[]>();
  const lookup: HostLookup = async (host) => {
    const addresses = names.get(host);
    return addresses ? addresses.map((address) => ({ address, family: address.includes(':') ? 6 : 4 })) : systemLookup(host);
  };
  before(async () => {
    p = await startPipeline({ WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'false', WEBHOOK_RETRY_DELAYS_MS: '0,100' }, {}, { lookup });
  });
  after(() => p?.close());

  it('refuses a host that resolves to a private address at delivery time (no connection made)', async () => {
    // Saved directly, as if its name had resolved to a public address when it was checked.
    const rebound = await p.subscribe({ url: `https://localhost:${new URL(p.receiver.url).port}/hook` });
    const literal = await p.subscribe({ url: `${p.receiver.url}/hook` });
    const mapped = await p.subscribe({ url: `https://[::ffff:127.0.0.1]:${new URL(p.receiver.url).port}/hook` });
    await p.writer.query(`INSERT INTO shop_master.orders VALUES (1, 'new', 1)`);
    for (const wh of [rebound, literal, mapped]) {
      const [d] = await eventually(
        () => p.delivery(wh),
        (r) => r[0]?.status === 'dead',
      );
      expect(d!.http_status).to.equal(null);
      expect(d!.last_error).to.match(
        /refused to connect: .* resolves to a private or reserved address; set WEBHOOK_ALLOW_PRIVATE_NETWORKS=true to allow it$/,
      );
    }
    expect(p.receiver.requests).to.have.length(0);
  });

  it('DNS rebinding: a name public when the API checked it and private when the worker connects is refused', async () => {
    await p.removeSubscriptions();
    const port = new URL(p.receiver.url).port;
    // 93.184.216.34 is only ever resolved to here, never connected to: the name is rebound before any change is written.
    names.set('hooks.rebind.test', ['93.184.216.34']);
    names.set('split.rebind.test', ['93.184.216.34']);
    const api = new HttpClient(p.t.url, {
      authorization: `Bearer ${await p.t.managementToken('shop')}`,
      'x-project-id': 'shop',
      environment: 'master',
    });
    const ids: Record<string, string> = {};
    for (const host of ['hooks.rebind.test', 'split.rebind.test']) {
      const res = await api.post('/api/rest/_webhooks', {
        projectId: 'shop',
        environment: 'master',
        table: 'orders',
        events: ['INSERT'],
        url: `https://${host}:${port}/hook`,
        secret: 'rebind-secret-0123456789',
      });
      expect(res.status, JSON.stringify(res.body)).to.equal(201);
      ids[host] = res.body.webhook.id;
    }
    // Now the names point inside: one wholly, one with a public address beside the private one.
    names.set('hooks.rebind.test', ['127.0.0.1']);
    names.set('split.rebind.test', ['93.184.216.34', '10.0.0.7']);
    await p.writer.query(`INSERT INTO shop_master.orders VALUES (2, 'new', 1)`);
    const [one] = await eventually(
      () => p.delivery(ids['hooks.rebind.test']!),
      (r) => r[0]?.status === 'dead',
    );
    expect(one!.last_error).to.match(
      /refused to connect: hooks\.rebind\.test resolves to a private or reserved address; set WEBHOOK_ALLOW_PRIVATE_NETWORKS=true to allow it$/,
    );
    const [two] = await eventually(
      () => p.delivery(ids['split.rebind.test']!),
      (r) => r[0]?.status === 'dead',
    );
    expect(two!.last_error).to.match(
      /refused to connect: split\.rebind\.test resolves to a private or reserved address; set WEBHOOK_ALLOW_PRIVATE_NETWORKS=true to allow it$/,
    );
    // Neither the delivery nor its attempt log tells the tenant what its name resolved to inside.
    for (const d of [one!, two!]) expect(JSON.stringify(d)).to.not.match(/127\.0\.0\.1|10\.0\.0\.7/);
    expect(p.receiver.requests).to.have.length(0);
    // And the API refuses the name as it resolves now.
    const again = await api.post('/api/rest/_webhooks', {
      projectId: 'shop',
      environment: 'master',
      table: 'orders',
      events: ['INSERT'],
      url: `https://hooks.rebind.test:${port}/hook`,
      secret: 'rebind-secret-0123456789',
    });
    expect(again.status).to.equal(400);
    expect(again.body.violations[0].path).to.equal('url');
  });
});
