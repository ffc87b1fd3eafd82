import { randomBytes } from 'node:crypto';
import { expect } from 'chai';
import type { Browser, Page } from 'playwright-core';
import { eventually, startPipeline, type Pipeline } from '../delivery/support.js';
import { launchChromium } from '../support/chromium.js';

// The console where the endpoint misbehaves: "Retry now" under an open breaker says when it will
// go; a subscription its receiver disabled (410) refuses a replay and shows it is disabled; polling
// stops while the tab is hidden. No console or page error throughout.

describe('delivery console: open breaker, disabled subscription, hidden tab', function () {
  this.timeout(120_000);
  let p: Pipeline;
  let browser: Browser;
  let page: Page;
  let webhookId: string;
  const problems: string[] = [];
  const apiCalls: number[] = [];
  let nextId = 1;
  const insertRow = () => p.writer.query("INSERT INTO shop_master.orders (id, status, amount) VALUES ($1, 'paid', 1)", [nextId++]);

  before(async function () {
    this.timeout(15 * 60_000);
    p = await startPipeline({ WEBHOOK_BREAKER_FAILURES: '1', WEBHOOK_BREAKER_COOLDOWN_MS: '600000', WEBHOOK_RETRY_DELAYS_MS: '0' });
    const token = await p.t.managementToken('shop');
    webhookId = await p.subscribe({ secret: `whsec_${randomBytes(32).toString('base64')}` });
    browser = await launchChromium();
    page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    page.setDefaultTimeout(10_000);
    page.on('console', (m) => {
      if (m.type() === 'error' || m.type() === 'warning') problems.push(`${m.type()}: ${m.text()} (${m.location().url})`);
    });
    page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
    page.on('request', (r) => {
      if (r.url().includes('/api/rest/_webhooks')) apiCalls.push(Date.now());
    });
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

  it('"Retry now" under an open breaker says when the delivery will go', async () => {
    await insertRow(); // delivered
    await page.evaluate(`location.hash = '#/w/${webhookId}'`);
    const row = page.locator('#deliveries tbody tr').first();
    await row.getByText('delivered').waitFor({ timeout: 15_000 });
    const deliveredId = (await row.getAttribute('data-id'))!;
    p.receiver.behave = () => ({ status: 500 });
    await insertRow(); // fails once: the breaker opens for ten minutes
    await page
      .locator('#summary')
      .getByText(/open until/)
      .waitFor({ timeout: 15_000 });
    await page
      .locator(`#deliveries tr[data-id="${deliveredId}"]`)
      .getByRole('button', { name: /^Details/ })
      .click();
    await page.locator('#delivery-title').getByText(deliveredId).waitFor();
    await page.getByRole('button', { name: 'Retry now' }).click();
    const said = await page
      .locator('#status')
      .getByText(/^Queued, but the endpoint's breaker is open until .+ \(in \d+ minutes\)/)
      .innerText();
    expect(said).to.match(/nothing is sent before then/);
    expect(said).not.to.contain('Sent again');
  });

  it('a subscription its receiver disabled (410) shows it, and refuses a replay', async () => {
    await p.t.ctx.pool.query('DELETE FROM walgate.endpoint_breakers');
    p.receiver.behave = () => ({ status: 410 });
    await p.writer.query('UPDATE walgate.webhooks SET url = url || $2 WHERE id = $1', [webhookId, '?fresh']); // a fresh breaker key
    await insertRow();
    await page.locator('#state').getByText('Disabled').waitFor({ timeout: 20_000 });
    await page.getByRole('button', { name: 'Replay dead letters…' }).click();
    await page.getByText('Not replayed: the subscription is disabled. Resume it first, then replay.').waitFor();
    expect(await page.getByRole('dialog').isVisible()).to.equal(false);
    const { rows } = await p.t.ctx.pool.query(
      "SELECT count(*)::int AS n FROM walgate.deliveries WHERE webhook_id = $1 AND status = 'dead'",
      [webhookId],
    );
    expect(rows[0].n, 'the dead letters stay dead').to.be.above(0);
  });

  it('polls while visible, waits while hidden, resumes when shown', async () => {
    await eventually(
      async () => apiCalls.filter((t) => t > Date.now() - 3000).length,
      (n) => n > 0,
      10_000,
    );
    await page.evaluate(`Object.defineProperty(document, 'hidden', { configurable: true, get: () => true });
      document.dispatchEvent(new Event('visibilitychange'))`);
    await page.waitForTimeout(2500); // a poll in flight may still land
    const hiddenSince = Date.now();
    await page.waitForTimeout(5000);
    expect(
      apiCalls.filter((t) => t > hiddenSince),
      'requests while hidden',
    ).to.deep.equal([]);
    await page.evaluate(`Object.defineProperty(document, 'hidden', { configurable: true, get: () => false });
      document.dispatchEvent(new Event('visibilitychange'))`);
    const shown = Date.now();
    await eventually(
      async () => apiCalls.filter((t) => t > shown).length,
      (n) => n > 0,
      5000,
    );
  });

  it('no console or page error', () => {
    expect(problems).to.deep.equal([]);
  });
});
