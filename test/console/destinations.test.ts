import { expect } from 'chai';
import type { Browser, Page } from 'playwright-core';
import { startPipeline, type Pipeline } from '../delivery/support.js';
import { NATS_URL, TestStream, uniqueName } from '../support/brokers.js';
import { expectAccessible, signedInConsole } from './support.js';

// The console's Destinations page in Chromium (docs/destinations.md): a NATS destination created
// in the page (its token typed once, never shown), a subscription to it through the form with a
// subject template, an INSERT that arrives in a JetStream stream, the page listing which
// subscriptions use it, a change of its credentials, and its deletion refused while the
// subscription uses it — the page names the subscription. axe-core checks each view.

describe('console: the Destinations page in Chromium', function () {
  this.timeout(120_000);
  let p: Pipeline;
  let browser: Browser;
  let page: Page;
  let stream: TestStream;
  const problems: string[] = [];
  const prefix = uniqueName('wgconsole');
  const name = uniqueName('console').replaceAll('_', '-');

  before(async function () {
    this.timeout(15 * 60_000); // a first run may have to install Chromium
    p = await startPipeline({ WEBHOOK_BREAKER_FAILURES: '1000' });
    stream = await TestStream.create([`${prefix}.>`]);
    const token = await p.t.managementToken('shop');
    ({ browser, page } = await signedInConsole(p.t.url, token, problems));
  });
  after(async () => {
    await browser?.close();
    await stream?.close();
    await p?.close();
  });

  /** A refusal the test provokes: Chromium logs its status as a console error, which is expected. */
  const expectLogged = async (status: number) => {
    for (let waited = 0; !problems.some((x) => x.includes(`status of ${status}`)) && waited < 5000; waited += 50) {
      await new Promise((r) => setTimeout(r, 50));
    }
    const logged = problems.findIndex((x) => x.includes(`status of ${status}`));
    expect(logged, `a ${status} logged`).to.be.at.least(0);
    problems.splice(logged, 1);
  };

  it('creates a NATS destination in the page; the list shows its kind, URL and which credentials are set', async () => {
    await page.getByRole('link', { name: 'Destinations' }).click();
    await page.getByRole('heading', { name: 'Destinations' }).waitFor();
    await page.getByText('No destination in this environment yet.').waitFor();
    await expectAccessible(page, 'empty destinations list');
    await page.getByLabel('Name', { exact: true }).fill(name);
    await page.getByLabel('Kind').selectOption('nats');
    await page.getByLabel('URL', { exact: true }).fill(NATS_URL);
    await page.getByLabel('NATS token (optional)').fill('never-shown-token');
    await page.getByRole('button', { name: 'Create destination' }).click();
    await page.getByText(`Destination ${name} created.`).waitFor();
    const table = page.getByRole('region', { name: 'Destinations' });
    await table.getByRole('link', { name }).waitFor();
    const listed = await table.innerText();
    expect(listed).to.contain('nats').and.contain(NATS_URL).and.contain('token');
    expect(await page.content()).not.to.contain('never-shown-token');
    await expectAccessible(page, 'destinations list');
  });

  let webhookId: string;

  it('the subscription form publishes to it: an INSERT arrives in the JetStream stream on the subject', async () => {
    await page.getByRole('link', { name: 'Subscriptions' }).click();
    await page.getByRole('link', { name: 'New subscription' }).click();
    await page.locator('#table').waitFor();
    await page.getByLabel('Table').selectOption('orders');
    await page.getByLabel(/A broker destination/).check();
    await page.getByLabel('Destination', { exact: true }).selectOption(name);
    expect(await page.getByLabel('Receiver URL (https)').isVisible()).to.equal(false);
    expect(await page.getByLabel('Routing key').isVisible(), 'a nats destination takes a subject').to.equal(false);
    await page.getByLabel('Subject').fill(`${prefix}.{table}.{event}.{key}`);
    await page.getByLabel(/Row ordering/).check();
    await expectAccessible(page, 'subscription form with a destination');
    await page.getByRole('button', { name: 'Create' }).click();
    await page.getByRole('heading', { name: 'Subscription created' }).waitFor();
    webhookId = await page.locator('#webhook-id').innerText();
    const { rows } = await p.t.ctx.pool.query('SELECT url, destination_subject FROM walgate.webhooks WHERE id = $1', [webhookId]);
    expect(rows[0].destination_subject).to.equal(`${prefix}.{table}.{event}.{key}`);

    await p.writer.query("INSERT INTO shop_master.orders (id, status, amount) VALUES (7, 'new', 1)");
    for (let waited = 0; (await stream.count()) < 1 && waited < 20_000; waited += 100) await new Promise((r) => setTimeout(r, 100));
    const [message] = await stream.messages();
    expect(message?.subject).to.equal(`${prefix}.orders.INSERT.7`);
    expect(JSON.parse(message!.body)).to.include({ table: 'orders', event: 'INSERT' });

    // The form shows the destination again when the subscription is edited.
    await page.evaluate(`location.hash = '#/w/${webhookId}/edit'`);
    await page.getByRole('heading', { name: 'Edit subscription' }).waitFor();
    expect(await page.getByLabel(/A broker destination/).isChecked()).to.equal(true);
    expect(await page.getByLabel('Subject').inputValue()).to.equal(`${prefix}.{table}.{event}.{key}`);
  });

  it('the destination page lists the subscription, changes the credentials, and deletion is refused naming the subscription', async () => {
    await page.getByRole('link', { name: 'Destinations' }).click();
    const table = page.getByRole('region', { name: 'Destinations' });
    await table.getByRole('link', { name: webhookId }).waitFor();
    await table.getByRole('link', { name }).click();
    await page.getByRole('heading', { name }).waitFor();
    await expectAccessible(page, 'destination page');
    await page.getByLabel('token', { exact: true }).check();
    await page.getByRole('button', { name: 'Save' }).click();
    await page.getByText(`Destination ${name} saved`).waitFor();
    const { rows } = await p.t.ctx.pool.query('SELECT credential_names FROM walgate.destinations WHERE name = $1', [name]);
    expect(rows[0].credential_names).to.deep.equal([]);

    await page.getByRole('button', { name: 'Delete' }).click();
    await expectAccessible(page, 'delete confirmation');
    await page.getByRole('dialog').getByRole('button', { name: 'Delete destination' }).click();
    await page.getByText(/DESTINATION_IN_USE: Subscriptions deliver to this destination/).waitFor();
    await page.locator('#delete-refusal').getByRole('link', { name: webhookId }).waitFor();
    await expectLogged(409);
    await expectAccessible(page, 'refused deletion');
    expect((await p.t.ctx.pool.query('SELECT 1 FROM walgate.destinations WHERE name = $1', [name])).rowCount).to.equal(1);

    // Once no subscription uses it, it goes.
    const token = await p.t.managementToken('shop');
    const gone = await fetch(`${p.t.url}/api/rest/_webhooks/${webhookId}`, {
      method: 'DELETE',
      headers: { authorization: `Bearer ${token}`, 'x-project-id': 'shop', environment: 'master' },
    });
    expect(gone.status).to.equal(204);
    await page.getByRole('button', { name: 'Delete', exact: true }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Delete destination' }).click();
    await page.getByText(`Destination ${name} deleted.`).waitFor();
    await page.getByText('No destination in this environment yet.').waitFor();
  });

  it('no console or page error', () => {
    expect(problems).to.deep.equal([]);
  });
});
