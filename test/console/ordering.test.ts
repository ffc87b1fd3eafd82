import { expect } from 'chai';
import type { Browser, Page } from 'playwright-core';
import { startPipeline, type Pipeline } from '../delivery/support.js';
import { signedInConsole } from './support.js';

// The console and ordering by a column group: the form offers none, row or a group of columns
// typed in, the subscription's page says which, the form shows the group again, and a column the
// table lacks is refused naming its place.

describe('delivery console: ordering by a column group', function () {
  this.timeout(120_000);
  let p: Pipeline;
  let browser: Browser;
  let page: Page;
  const problems: string[] = [];

  before(async function () {
    this.timeout(15 * 60_000); // a first run may have to install Chromium
    p = await startPipeline({ WEBHOOK_BREAKER_FAILURES: '1000' });
    const token = await p.t.managementToken('shop');
    ({ browser, page } = await signedInConsole(p.t.url, token, problems));
  });
  after(async () => {
    await browser?.close();
    await p?.close();
  });

  let webhookId: string;
  const stored = async () =>
    (await p.t.ctx.pool.query('SELECT ordering, ordering_by FROM walgate.webhooks WHERE id = $1', [webhookId])).rows[0];
  const edit = async () => {
    await page.evaluate(`location.hash = '#/w/${webhookId}/edit'`);
    await page.getByRole('heading', { name: 'Edit subscription' }).waitFor();
    await page.locator('#ordering-by').waitFor();
  };

  it('creates a subscription ordered by a group of columns; its page says so', async () => {
    await page.getByRole('link', { name: 'New subscription' }).click();
    await page.locator('#table').waitFor();
    await page.getByLabel('Table').selectOption('orders');
    await page.getByLabel('Receiver URL (https)').fill(`${p.receiver.url}/hook`);
    expect(await page.getByLabel(/None: changes go out/).isChecked(), 'no order by default').to.equal(true);
    await page.getByLabel('Group columns').fill('status, amount');
    // Typing columns picks group ordering.
    expect(await page.getByLabel(/Group ordering/).isChecked()).to.equal(true);
    await page.getByRole('button', { name: 'Create' }).click();
    await page.getByRole('heading', { name: 'Subscription created' }).waitFor();
    const { rows } = await p.t.ctx.pool.query('SELECT id FROM walgate.webhooks');
    webhookId = rows[0].id;
    expect(await stored()).to.deep.equal({ ordering: 'group', ordering_by: ['status', 'amount'] });
    await page.getByRole('link', { name: 'Open the subscription' }).click();
    await page.locator('#ordering-mode').getByText('per status + amount, in commit order').waitFor();
  });

  it('the form shows the group again; a column the table lacks is refused naming its place; row ordering replaces the group', async () => {
    await edit();
    expect(await page.getByLabel(/Group ordering/).isChecked()).to.equal(true);
    expect(await page.locator('#ordering-by').inputValue()).to.equal('status, amount');
    await page.getByLabel('Group columns').fill('status, nope');
    await page.getByRole('button', { name: 'Save' }).click();
    await page.getByText(/VALIDATION_ERROR.*ordering\.by\.1: "nope" is not a column of the table/).waitFor();
    // That refusal is expected: Chromium logs the 400 as a console error.
    for (let waited = 0; !problems.some((x) => x.includes('status of 400')) && waited < 5000; waited += 50) {
      await new Promise((r) => setTimeout(r, 50));
    }
    const logged = problems.findIndex((x) => x.includes('status of 400'));
    if (logged >= 0) problems.splice(logged, 1);
    expect(await stored()).to.deep.equal({ ordering: 'group', ordering_by: ['status', 'amount'] });

    await page.getByLabel(/Row ordering/).check();
    await page.getByRole('button', { name: 'Save' }).click();
    await page.locator('#ordering-mode').getByText('per row, in commit order').waitFor();
    expect(await stored()).to.deep.equal({ ordering: 'row', ordering_by: null });
  });

  it('no console or page error', () => {
    expect(problems).to.deep.equal([]);
  });
});
