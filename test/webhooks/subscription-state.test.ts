import { expect } from 'chai';
import type { Browser, Page } from 'playwright-core';
import { eventually, startPipeline, type Pipeline } from '../delivery/support.js';
import { launchChromium } from '../support/chromium.js';
import { HttpClient } from '../support/http.js';

// A subscription whose receiver fails reads as failing where a person looks: its `state` in the
// list and in its view, the console's list, and one `warn` line from the tailer with the reason.

describe('subscription state: failing deliveries are visible', function () {
  this.timeout(120_000);
  let p: Pipeline;
  let api: HttpClient;
  let browser: Browser;
  let page: Page;
  let webhookId: string;
  let nextId = 1;
  const insertRow = () => p.writer.query("INSERT INTO shop_master.orders (id, status, amount) VALUES ($1, 'paid', 1)", [nextId++]);
  const listed = async () => (await api.get('/api/rest/_webhooks')).body.webhooks.find((w: any) => w.id === webhookId);
  const stateLines = () =>
    p.t.logs.lines.map((l) => JSON.parse(l) as Record<string, any>).filter((l) => l.webhook === webhookId && l.state !== undefined);
  /** The state badge of its row in the console's list, loaded afresh (by way of its detail page). */
  const consoleState = async () => {
    await page.evaluate(`location.hash = '#/w/${webhookId}'`);
    await page.locator('#summary #state').waitFor();
    await page.evaluate(`location.hash = '#/'`);
    const badge = page.locator('tr', { has: page.locator(`a[href="#/w/${webhookId}"]`) }).locator('.badge');
    await badge.waitFor();
    return badge;
  };

  before(async function () {
    this.timeout(15 * 60_000);
    // One attempt per delivery, and a breaker that opens at the second failure in a row.
    p = await startPipeline({ WEBHOOK_RETRY_DELAYS_MS: '0', WEBHOOK_BREAKER_FAILURES: '2', WEBHOOK_BREAKER_COOLDOWN_MS: '600000' });
    const token = await p.t.managementToken('shop');
    api = new HttpClient(p.t.url, { authorization: `Bearer ${token}`, 'x-project-id': 'shop', environment: 'master' });
    webhookId = await p.subscribe();
    browser = await launchChromium();
    page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    page.setDefaultTimeout(10_000);
    await page.goto(`${p.t.url}/console`);
    await page.locator('#project-id').fill('shop');
    await page.locator('#token').fill(token);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('heading', { name: 'Subscriptions' }).waitFor();
  });
  after(async () => {
    await browser?.close();
    await p?.close();
  });

  it('healthy while its deliveries succeed', async () => {
    await insertRow();
    await eventually(
      () => p.delivery(webhookId),
      (d) => d[0]?.status === 'delivered',
    );
    expect(await listed()).to.include({ active: true, state: 'healthy' });
    expect(await (await consoleState()).textContent()).to.equal('Active');
    expect(stateLines()).to.deep.equal([]);
  });

  it('failing after a failed attempt: in the list, in its view, in the console list, and one warn line with the reason', async () => {
    p.receiver.behave = () => ({ status: 500 });
    await insertRow();
    const w = await eventually(listed, (v) => v.state !== 'healthy');
    expect(w).to.include({ active: true, state: 'failing' });
    const detail = await api.get(`/api/rest/_webhooks/${webhookId}`);
    expect(detail.body.webhook.state).to.equal('failing');
    const badge = await consoleState();
    await badge.getByText('Failing: last 1 attempt failed').waitFor();
    expect(await badge.getAttribute('class')).to.contain('failing');
    const lines = await eventually(
      async () => stateLines(),
      (l) => l.length > 0,
    );
    expect(lines).to.have.length(1);
    expect(lines[0]).to.include({ level: 40, state: 'failing', previous: 'healthy', reason: 'HTTP 500' });
  });

  it('breaker_open once its breaker opens; the change within the minute is not logged again (rate limit)', async () => {
    await insertRow();
    await eventually(listed, (v) => v.state === 'breaker_open');
    await (await consoleState()).getByText('Breaker open').waitFor();
    expect(stateLines()).to.have.length(1);
  });

  it('disabled when paused', async () => {
    const res = await api.patch(`/api/rest/_webhooks/${webhookId}`, { active: false });
    expect(res.status, res.text).to.equal(200);
    expect(res.body.webhook).to.include({ active: false, state: 'disabled' });
    expect((await listed()).state).to.equal('disabled');
  });
});
