import { expect } from 'chai';
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

  it('opens after 5 consecutive failures: nothing is sent during the cool-down, waiting deliveries keep their attempts; then one probe, then normal flow', async () => {
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
    // During the cool-down no request reaches the endpoint.
    await new Promise((r) => setTimeout(r, COOLDOWN - 400));
    expect(p.receiver.requests).to.have.length(5);
    const waiting = (await p.delivery(wh)).filter((d) => d.attempts === 0);
    expect(waiting).to.have.length(3);
    expect(waiting.every((d) => d.status === 'pending')).to.equal(true);
    // After it: one probe goes first; its success closes the breaker and the rest follow.
    await p.receiver.waitFor(6, 5000);
    expect(p.receiver.requests[5]!.at - openedAt).to.be.at.least(COOLDOWN - 400);
    const done = await eventually(() => p.delivery(wh), (r) => r.filter((d) => d.status === 'delivered').length >= 3, 10_000);
    expect(done.filter((d) => d.attempts === 1 && d.status === 'delivered')).to.have.length(3);
    const after = await p.t.ctx.pool.query('SELECT consecutive_failures, opened_until FROM walgate.endpoint_breakers');
    expect(after.rows[0]).to.deep.equal({ consecutive_failures: 0, opened_until: null });
    // The worker also sees the state in its local (opossum) mirror.
    expect(p.worker.breakerStates().get(new URL(p.receiver.url).origin)).to.equal('closed');
  });
});

describe('delivery: a slow and a failing subscriber do not hold up a healthy one', function () {
  this.timeout(30_000);
  let p: Pipeline;
  before(async () => {
    p = await startPipeline({ WEBHOOK_TIMEOUT_MS: '3000', WEBHOOK_RETRY_DELAYS_MS: '0,100,100,100,100', WEBHOOK_BREAKER_FAILURES: '1000' }, { perWebhook: 4, concurrency: 16 });
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
    const delivered = await eventually(() => p.delivery(healthy), (r) => r.filter((d) => d.status === 'delivered').length === 40);
    expect(delivered).to.have.length(40);
  });
});

describe('delivery: the SSRF guard checks the address actually connected', function () {
  this.timeout(30_000);
  let p: Pipeline;
  before(async () => {
    p = await startPipeline({ WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'false', WEBHOOK_RETRY_DELAYS_MS: '0,100' });
  });
  after(() => p?.close());

  it('refuses a host that resolves to a private address at delivery time (no connection made)', async () => {
    // Saved directly, as if its name had resolved to a public address when it was checked.
    const rebound = await p.subscribe({ url: `https://localhost:${new URL(p.receiver.url).port}/hook` });
    const literal = await p.subscribe({ url: `${p.receiver.url}/hook` });
    const mapped = await p.subscribe({ url: `https://[::ffff:127.0.0.1]:${new URL(p.receiver.url).port}/hook` });
    await p.writer.query(`INSERT INTO shop_master.orders VALUES (1, 'new', 1)`);
    for (const wh of [rebound, literal, mapped]) {
      const [d] = await eventually(() => p.delivery(wh), (r) => r[0]?.status === 'dead');
      expect(d!.http_status).to.equal(null);
      expect(d!.last_error).to.match(/refused to connect: .* resolves to loopback address/);
    }
    expect(p.receiver.requests).to.have.length(0);
  });
});
