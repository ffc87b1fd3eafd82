import { expect } from 'chai';
import type { Browser, Page } from 'playwright-core';
import { eventually, startPipeline, type Pipeline } from '../delivery/support.js';
import { signedInConsole } from './support.js';

// The console and `history: "failures"`: the form sets it, the subscription says which mode it is
// in, and its delivery log says what it cannot list — while a delivery that failed is listed as ever.

describe('delivery console: history "failures"', function () {
  this.timeout(120_000);
  let p: Pipeline;
  let browser: Browser;
  let page: Page;
  const problems: string[] = [];
  let nextId = 1;
  const insertRow = () => p.writer.query("INSERT INTO shop_master.orders (id, status, amount) VALUES ($1, 'paid', 1)", [nextId++]);

  before(async function () {
    this.timeout(15 * 60_000); // a first run may have to install Chromium
    p = await startPipeline({ WEBHOOK_BREAKER_FAILURES: '1000', WEBHOOK_RETRY_DELAYS_MS: '0' });
    const token = await p.t.managementToken('shop');
    ({ browser, page } = await signedInConsole(p.t.url, token, problems));
  });
  after(async () => {
    await browser?.close();
    await p?.close();
  });

  let webhookId: string;

  it('creates a subscription keeping failures only; its page says so, and its log says what it does not list', async () => {
    await page.getByRole('link', { name: 'New subscription' }).click();
    await page.locator('#table').waitFor();
    await page.getByLabel('Table').selectOption('orders');
    await page.getByLabel('Receiver URL (https)').fill(`${p.receiver.url}/hook`);
    await page.getByLabel(/History of failures only/).check();
    await page.getByRole('button', { name: 'Create' }).click();
    await page.getByRole('heading', { name: 'Subscription created' }).waitFor();
    const { rows } = await p.t.ctx.pool.query('SELECT id, history FROM walgate.webhooks');
    expect(rows).to.deep.equal([{ id: rows[0].id, history: 'failures' }]);
    webhookId = rows[0].id;
    await page.getByRole('link', { name: 'Open the subscription' }).click();
    expect(await page.locator('#history-mode').innerText()).to.match(/^failures only/);

    await insertRow();
    await insertRow();
    await eventually(
      async () =>
        (
          await p.t.ctx.pool.query(`SELECT coalesce(sum(delivered), 0)::int AS n FROM walgate.delivery_minutes WHERE webhook_id = $1`, [
            webhookId,
          ])
        ).rows[0].n,
      (n) => n === 2,
    );
    const notice = page.locator('#not-listed');
    await notice.getByText(/delivered at their first attempt are not listed/).waitFor();
    expect(await page.locator('#deliveries').innerText()).to.contain('No delivery matches.');

    // A failing receiver: the dead letter is listed as ever, under the notice.
    p.receiver.behave = () => ({ status: 500 });
    await insertRow();
    await page.locator('#deliveries tbody tr').first().getByText('dead').waitFor({ timeout: 15_000 });
    expect(await page.locator('#deliveries tbody tr').count()).to.equal(1);
    expect(await notice.isVisible()).to.equal(true);
    p.receiver.behave = () => ({ status: 200 });
  });

  it('editing back to full history: the page says so and the notice goes', async () => {
    await page.evaluate(`location.hash = '#/w/${webhookId}/edit'`);
    const box = page.getByLabel(/History of failures only/);
    await box.waitFor();
    expect(await box.isChecked()).to.equal(true);
    await box.uncheck();
    await page.getByRole('button', { name: 'Save' }).click();
    await page.locator('#history-mode').getByText(/^full/).waitFor();
    const { rows } = await p.t.ctx.pool.query('SELECT history FROM walgate.webhooks WHERE id = $1', [webhookId]);
    expect(rows[0].history).to.equal('full');
    await eventually(
      () => page.locator('#not-listed').isVisible(),
      (v) => v === false,
    );
  });

  it('no console or page error', () => {
    expect(problems).to.deep.equal([]);
  });
});
