import { expect } from 'chai';
import type { Browser, Page } from 'playwright-core';
import { eventually, startPipeline, type Pipeline } from '../delivery/support.js';
import { signedInConsole } from './support.js';

// The console and `batch`: the form sets the changes per request, the subscription says whether
// it batches, and its receiver gets {"events": [...]}; editing back to 1 turns batching off.

describe('delivery console: batching', function () {
  this.timeout(120_000);
  let p: Pipeline;
  let browser: Browser;
  let page: Page;
  const problems: string[] = [];

  before(async function () {
    this.timeout(15 * 60_000); // a first run may have to install Chromium
    p = await startPipeline({ WEBHOOK_BREAKER_FAILURES: '1000' });
    token = await p.t.managementToken('shop');
    ({ browser, page } = await signedInConsole(p.t.url, token, problems));
  });
  after(async () => {
    await browser?.close();
    await p?.close();
  });

  let webhookId: string;
  let token: string;
  const api = () => ({ authorization: `Bearer ${token}`, 'x-project-id': 'shop', environment: 'master' });

  it('creates a subscription with 20 changes per request: its page says so, and its receiver gets batches', async () => {
    await page.getByRole('link', { name: 'New subscription' }).click();
    await page.locator('#table').waitFor();
    await page.getByLabel('Table').selectOption('orders');
    await page.getByLabel('Receiver URL (https)').fill(`${p.receiver.url}/hook`);
    await page.getByLabel(/Changes per request/).fill('20');
    await page.getByRole('button', { name: 'Create' }).click();
    await page.getByRole('heading', { name: 'Subscription created' }).waitFor();
    const { rows } = await p.t.ctx.pool.query('SELECT id, batch_max_events, batch_max_wait_ms FROM walgate.webhooks');
    expect(rows).to.deep.equal([{ id: rows[0].id, batch_max_events: 20, batch_max_wait_ms: 100 }]);
    webhookId = rows[0].id;
    await page.getByRole('link', { name: 'Open the subscription' }).click();
    expect(await page.locator('#batch-mode').innerText()).to.match(/^up to 20 changes per request/);

    await p.writer.query(`INSERT INTO shop_master.orders SELECT g, 'paid', 1 FROM generate_series(1, 30) g`);
    const requests = await eventually(
      async () => p.receiver.requests,
      (r) => r.flatMap((q) => JSON.parse(q.body).events ?? []).length === 30,
    );
    expect(requests.length).to.be.at.most(3);
    // A delivery of it names its batch, the webhook-id it went under, in the API and on its page.
    const { deliveries } = (await p.t.http.get(`/api/rest/_webhooks/${webhookId}`, { headers: api() })).body as any;
    expect(requests.map((r) => r.headers['webhook-id'])).to.include(deliveries[0].batchId);
    await page.evaluate(`location.hash = '#/w/${webhookId}/d/${deliveries[0].id}'`);
    expect(await page.locator('#batch-id').innerText()).to.equal(deliveries[0].batchId);
  });

  it('a value out of range is refused, naming the field; editing back to 1 turns batching off', async () => {
    await page.evaluate(`location.hash = '#/w/${webhookId}/edit'`);
    const size = page.getByLabel(/Changes per request/);
    await size.waitFor();
    expect(await size.inputValue()).to.equal('20');
    await size.fill('5000');
    // The browser's own range check would stop the submit: the API's answer is what is tested here.
    await page.evaluate(`document.querySelector('#batch-max-events').removeAttribute('max')`);
    await page.getByRole('button', { name: 'Save' }).click();
    await page
      .getByText(/batch\.maxEvents/)
      .first()
      .waitFor();
    await size.fill('1');
    await page.getByRole('button', { name: 'Save' }).click();
    await page.locator('#batch-mode').getByText(/^off/).waitFor();
    const { rows } = await p.t.ctx.pool.query('SELECT batch_max_events FROM walgate.webhooks WHERE id = $1', [webhookId]);
    expect(rows[0].batch_max_events).to.equal(1);
  });

  it('no console or page error', () => {
    // A refused save is reported by the console itself; the browser logs the 400 it received.
    expect(problems.filter((m) => !/status of 400/.test(m))).to.deep.equal([]);
  });
});
