import { randomBytes } from 'node:crypto';
import { readFile, mkdtemp, rm } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import type { Browser, Page } from 'playwright-core';
import { eventually, startPipeline, type Pipeline } from '../delivery/support.js';
import { launchChromium } from '../support/chromium.js';
import { verifies } from '../support/receiver.js';
import { insertSubscription } from '../support/subscriptions.js';

// The delivery console in a real browser (Debian's Chromium through playwright-core), on the whole
// path: a plain pg client writes, the tailer and the worker deliver over HTTPS to a receiver, and
// a person signs in and works only through the page, partly with the keyboard alone. axe-core
// checks every main view; the token must appear in no URL, no log line and no page markup.
//
// Screenshots go to a temporary directory; to refresh the ones in the README:
//   CONSOLE_SCREENSHOTS=docs npx mocha dist/test/console/console.test.js

const require = createRequire(import.meta.url);

interface AxeViolation {
  id: string;
  impact: string | null;
  help: string;
  nodes: Array<{ target: string[] }>;
}

describe('delivery console: /console in Chromium', function () {
  this.timeout(120_000);
  let p: Pipeline;
  let browser: Browser;
  let page: Page;
  let token: string;
  let shots: string;
  let axeSource: string;
  const requested: string[] = [];
  const elsewhere: string[] = [];
  const problems: string[] = [];
  const markup: string[] = [];
  const statusLines: string[] = [];
  const API_KEY = `sk_test_${randomBytes(12).toString('hex')}`;
  let nextId = 1;

  const insertRow = (status = 'paid') =>
    p.writer.query('INSERT INTO shop_master.orders (id, status, amount) VALUES ($1, $2, 12.50)', [nextId++, status]);

  async function checkAccessibility(view: string): Promise<void> {
    markup.push(await page.content());
    if (!(await page.evaluate("'axe' in window"))) await page.evaluate(axeSource); // evaluated by the tool, not a <script>: the CSP stays strict
    const violations = (await page.evaluate(
      "axe.run(document, { resultTypes: ['violations'] }).then((r) => r.violations)",
    )) as AxeViolation[];
    const grave = violations.filter((v) => v.impact === 'serious' || v.impact === 'critical');
    expect(
      grave.map((v) => `${v.id} (${v.impact}): ${v.help} — ${v.nodes.map((n) => n.target.join(' ')).join(', ')}`),
      `serious or critical accessibility violations in ${view}`,
    ).to.deep.equal([]);
  }

  async function screenshot(name: string): Promise<void> {
    await page.screenshot({ path: path.join(shots, `console-${name}.png`), fullPage: true });
  }

  /** The status badge of the newest delivery rows, as the person sees them. */
  const statuses = () => page.locator('#deliveries tbody tr td:nth-child(3)').allInnerTexts();

  before(async function () {
    this.timeout(15 * 60_000); // a first run may have to install Chromium
    p = await startPipeline({ WEBHOOK_BREAKER_FAILURES: '100' });
    token = await p.t.managementToken('shop');
    await p.writer.query('CREATE TABLE shop_master.customers (id int PRIMARY KEY, email text)');
    await p.t.provision({ projectId: 'shop', name: 'staging' });
    axeSource = await readFile(require.resolve('axe-core/axe.min.js'), 'utf8');
    browser = await launchChromium();
    shots = process.env.CONSOLE_SCREENSHOTS ?? (await mkdtemp(path.join(tmpdir(), 'walgate-console-')));
    page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    page.setDefaultTimeout(10_000);
    await page.route('**/*', (route) => {
      const url = route.request().url();
      requested.push(url);
      if (url.startsWith(`${p.t.url}/`) || url.startsWith('data:')) return route.continue();
      elsewhere.push(url);
      return route.abort();
    });
    page.on('console', (m) => {
      // The one 404 the scenario asks for (an unknown subscription id) is logged by Chromium itself.
      if (m.text().startsWith('Failed to load resource') && m.location().url.includes('/wh_unknown')) return;
      if (m.type() === 'error' || m.type() === 'warning') problems.push(`${m.type()}: ${m.text()} (${m.location().url})`);
    });
    page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
    // An error the console itself reports (its status line) counts as much as one in the devtools.
    await page.exposeFunction('reportStatus', (text: string) => statusLines.push(text));
    await page.addInitScript({
      content: `document.addEventListener('DOMContentLoaded', () => {
        const line = document.getElementById('status');
        new MutationObserver(() => { if (line.className === 'error') window.reportStatus(line.textContent); })
          .observe(line, { childList: true, characterData: true, subtree: true, attributes: true });
      });`,
    });
  });
  after(async () => {
    await browser?.close();
    await p?.close();
    if (shots && !process.env.CONSOLE_SCREENSHOTS) await rm(shots, { recursive: true, force: true });
  });

  let firstSecret: string;
  let webhookId: string;

  /** The newest delivery row's Details, and its panel loaded. */
  async function openNewest(status: string): Promise<void> {
    const row = page.locator('#deliveries tbody tr').first();
    await row.getByText(status).waitFor({ timeout: 15_000 });
    const id = (await row.getAttribute('data-id'))!;
    await row.getByRole('button', { name: /^Details/ }).click();
    await page.locator('#delivery-title').getByText(`Delivery ${id}`).waitFor(); // this one, not the panel open before
    await page.locator('#delivery-status').getByText(status).waitFor();
  }

  /** No sideways scrolling of the page at 390 px, and no serious axe finding there. */
  async function phonePass(view: string): Promise<void> {
    await page.setViewportSize({ width: 390, height: 844 });
    await page.waitForTimeout(300);
    const overflow = await page.evaluate('document.documentElement.scrollWidth - document.documentElement.clientWidth');
    expect(overflow, `no sideways scrolling of ${view} on a phone`).to.be.at.most(0);
    await checkAccessibility(`${view} on a phone`);
    if (view === 'subscription') await page.screenshot({ path: path.join(shots, 'console-phone.png') });
    await page.setViewportSize({ width: 1280, height: 900 });
  }

  it('signs in with the keyboard, with no error; the page and its assets come from walgate under a strict CSP', async () => {
    const res = await page.goto(`${p.t.url}/console`);
    expect(res?.status()).to.equal(200);
    const csp = res?.headers()['content-security-policy'] ?? '';
    expect(csp).to.contain("script-src 'self'").and.not.contain('unsafe-inline');
    await page.getByRole('heading', { name: 'Sign in' }).waitFor();
    await checkAccessibility('sign in');
    await page.locator('#project-id').focus();
    await page.keyboard.type('shop');
    await page.keyboard.press('Tab');
    await page.keyboard.press('Tab');
    await page.keyboard.type(token);
    await page.keyboard.press('Enter');
    await page.getByRole('heading', { name: 'Subscriptions' }).waitFor();
    await page.getByText('No subscription in this environment yet.').waitFor();
    await page.waitForTimeout(500); // a second, racing load would fail here
    expect(problems, 'errors on sign-in').to.deep.equal([]);
    expect(statusLines, 'errors on sign-in').to.deep.equal([]);
    expect(await page.locator('#status').innerText()).to.equal('Signed in.');
    expect(await page.evaluate('sessionStorage.length')).to.equal(1);
    expect(await page.evaluate('localStorage.length')).to.equal(0);
  });

  it("switches between the project's environments with a picker; an unknown id is a not-found state", async () => {
    await eventually(
      () => page.locator('#env-switch option').allInnerTexts(),
      (o) => o.length === 2,
    );
    expect(await page.locator('#env-switch option').allInnerTexts()).to.deep.equal(['master', 'staging']);
    await page.getByLabel('Environment').selectOption('staging');
    await page.getByText('Environment staging.').waitFor();
    await page.getByText('No subscription in this environment yet.').waitFor();
    await page.getByLabel('Environment').selectOption('master');
    await page.getByText('Environment master.').waitFor();
    await page.evaluate("location.hash = '#/w/wh_unknown'");
    await page.getByRole('heading', { name: 'Subscription not found' }).waitFor();
    expect(await page.locator('button').allInnerTexts()).to.deep.equal(['Sign out']); // no live buttons
    await checkAccessibility('not found');
    await page.getByRole('link', { name: '← All subscriptions' }).click();
    await page.getByRole('heading', { name: 'Subscriptions' }).waitFor();
  });

  it('creates a subscription with a custom header; the secret is shown once, the header value never', async () => {
    await page.getByRole('link', { name: 'New subscription' }).click();
    await page.getByRole('heading', { name: 'New subscription' }).waitFor();
    await page.locator('#table').waitFor();
    expect(await page.locator('#table option').allInnerTexts()).to.deep.equal(['customers', 'orders']);
    await page.getByLabel('Table').selectOption('orders');
    expect((await page.locator('#select-columns label').allInnerTexts()).map((t) => t.replace(/\s+/g, ' ').trim())).to.deep.equal([
      'id integer',
      'status text',
      'amount numeric(12,2)',
    ]);
    await page.getByLabel('DELETE').uncheck();
    await page.getByLabel('Receiver URL (https)').fill(`${p.receiver.url}/hook`);
    await page.getByRole('button', { name: 'Add a condition' }).click();
    await page.locator('#filter-col-0').selectOption('status');
    await page.locator('#filter-val-0').fill('paid');
    await page.getByRole('button', { name: 'Add a header' }).click();
    await page.getByLabel('Name').fill('X-Api-Key');
    await page.getByLabel('Value').fill(API_KEY);
    await page.getByLabel(/Row ordering/).check();
    await checkAccessibility('create form');
    await screenshot('create');
    await page.getByRole('button', { name: 'Create' }).click();
    await page.getByRole('heading', { name: 'Subscription created' }).waitFor();
    firstSecret = await page.locator('#new-secret').innerText();
    expect(firstSecret).to.match(/^whsec_[A-Za-z0-9+/]{43}=$/);
    const { rows } = await p.t.ctx.pool.query('SELECT id, events, filter, ordering, header_names FROM walgate.webhooks');
    expect(rows).to.have.length(1);
    expect(rows[0]).to.deep.include({
      events: ['INSERT', 'UPDATE'],
      filter: { status: 'paid' },
      ordering: 'row',
      header_names: ['x-api-key'],
    });
    webhookId = rows[0].id;
    expect(await page.locator('#webhook-id').innerText()).to.equal(webhookId);
    await page.getByRole('link', { name: 'Open the subscription' }).click();
    await page.locator('#state').getByText('Active').waitFor();
    await page.getByText('per row, in commit order').waitFor();
    expect(await page.locator('#webhook-id').innerText()).to.equal(webhookId);
    expect(await page.locator('#custom-headers').innerText()).to.equal('x-api-key');
    expect(await page.content()).not.to.contain(firstSecret); // shown once: gone from the page
  });

  let firstEventId: string;

  it('a first-try delivery shows its request (headers and body) beside the answer; Retry now sends the same event again', async () => {
    await insertRow();
    await openNewest('delivered');
    const [received] = await p.receiver.waitFor(1);
    expect(verifies(firstSecret, received!)).to.equal(true);
    expect(received!.headers['x-api-key']).to.equal(API_KEY);
    firstEventId = received!.headers['webhook-id']!;
    expect(await page.locator('#event-id').innerText()).to.equal(firstEventId);
    const headers = await page.locator('#request-headers').innerText();
    expect(headers).to.contain(`webhook-id: ${firstEventId}`).and.contain('x-api-key: [hidden]').and.not.contain('webhook-signature');
    // The bytes that were signed and sent, not a re-formatted payload (its amount keeps `12.50`'s zero).
    expect(await page.locator('#request-body').innerText()).to.equal(received!.body);
    expect(await page.locator('#response-status').innerText()).to.equal('200');
    expect(await page.locator('#response-headers').innerText()).to.contain('content-type: text/plain');
    expect(await page.locator('#delivery').innerText(), 'no stray text').not.to.match(/^(null|undefined)$/m);
    expect(await page.locator('#session').innerText()).not.to.contain('http');
    expect(await page.locator('#session a').allInnerTexts()).to.deep.equal(['Subscriptions', 'Users', 'Organizations', 'Destinations']);
    await page.locator('.chart rect.ok').first().waitFor();
    await page.getByRole('button', { name: 'Copy body' }).waitFor();
    await checkAccessibility('delivery with request and response');

    const before = p.receiver.requests.length;
    await page.getByRole('button', { name: 'Retry now' }).click();
    await page.getByText('Sent again: the delivery is pending.').waitFor();
    const [again] = (await p.receiver.waitFor(before + 1)).slice(before);
    expect(again!.headers['webhook-id']).to.equal(firstEventId);
    expect(again!.body).to.equal(received!.body);
    expect(again!.headers['x-api-key']).to.equal(API_KEY);
  });

  it('an UPDATE shows before and after, the changed column marked', async () => {
    await p.writer.query('UPDATE shop_master.orders SET amount = 99.00 WHERE id = 1');
    await eventually(
      () => page.locator('#deliveries tbody tr').first().innerText(),
      (t) => t.includes('UPDATE') && t.includes('delivered'),
      15_000,
    );
    await openNewest('delivered');
    const changed = await page.locator('tr.changed').allInnerTexts();
    expect(changed).to.have.length(1);
    expect(changed[0]).to.contain('amount').and.contain('12.5').and.contain('99');
    await checkAccessibility('before and after');
  });

  it('a failing receiver: the attempts, their status, error and answer', async () => {
    p.receiver.behave = () => ({ status: 503, body: 'down for maintenance' });
    await insertRow();
    await openNewest('dead');
    const attempts = await page.locator('#delivery table tbody tr').allInnerTexts();
    expect(attempts).to.have.length(5);
    for (const a of attempts) expect(a).to.contain('503').and.contain('HTTP 503').and.contain('down for maintenance');
    expect(await page.locator('#request-body').innerText()).to.contain('"status":"paid"');
    expect(await page.locator('#response-body').innerText()).to.equal('down for maintenance');
    await page.locator('.chart rect.fail').first().waitFor();
    expect(await page.locator('#failures').innerText()).to.equal('5');
    const health = await page.locator('#health table tbody tr').first().innerText();
    expect(health).to.contain('Last 24 hours');
    await checkAccessibility('subscription with a dead delivery open');
    await screenshot('deliveries');
  });

  it('replays the dead letters, asking first with their count (keyboard); the open panel is refreshed', async () => {
    p.receiver.behave = () => ({ status: 200 });
    await page.getByRole('button', { name: 'Replay dead letters…' }).click();
    const dialog = page.getByRole('dialog');
    await dialog.getByText('Replay 1 dead delivery?').waitFor();
    await checkAccessibility('replay confirmation');
    await page.keyboard.press('Tab'); // from Cancel to Replay
    await page.keyboard.press('Enter');
    await page.getByText('Replayed 1 dead delivery.').waitFor();
    await page
      .locator('#delivery-status')
      .getByText(/pending|delivered/)
      .waitFor();
    await eventually(statuses, (all) => all.length >= 3 && all.every((s) => s === 'delivered'), 15_000);
  });

  it('refuses to replay while the subscription is paused', async () => {
    await page.getByRole('button', { name: 'Pause' }).click();
    await page.locator('#state').getByText('Paused').waitFor();
    await page.getByRole('button', { name: 'Replay dead letters…' }).click();
    await page.getByText('Not replayed: the subscription is paused. Resume it first, then replay.').waitFor();
    expect(await page.getByRole('dialog').isVisible()).to.equal(false);
    statusLines.length = 0; // that refusal is the expected error line
    await page.getByRole('button', { name: 'Resume' }).click();
    await page.locator('#state').getByText('Active').waitFor();
  });

  it('sends a test event, marked as one; finds it by event id across subscriptions', async () => {
    const before = p.receiver.requests.length;
    await page.getByRole('button', { name: 'Send a test event' }).click();
    await page.getByText(/^Test event evt_test_\w+ queued\.$/).waitFor();
    const [got] = (await p.receiver.waitFor(before + 1)).slice(before);
    expect(got!.headers['x-walgate-test']).to.equal('true');
    expect(verifies(firstSecret, got!)).to.equal(true);
    const testId = got!.headers['webhook-id']!;

    await page.getByRole('link', { name: '← All subscriptions' }).click();
    await page.getByLabel('Find an event').fill(firstEventId);
    await page.getByRole('button', { name: 'Search' }).click();
    await page.getByRole('heading', { name: 'Event deliveries' }).waitFor();
    await checkAccessibility('event search');
    await page.locator('table').getByRole('link', { name: 'orders' }).click();
    await page.locator('#event-id').getByText(firstEventId).waitFor();
    await page.evaluate(`location.hash = '#/events/${testId}'`);
    await page.locator('table').getByText('delivered').waitFor({ timeout: 15_000 });
  });

  it('rotates the secret: the next delivery verifies with the new and with the old secret', async () => {
    await page.locator('table').getByRole('link', { name: 'orders' }).click();
    await page.getByRole('button', { name: 'Rotate secret' }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Rotate' }).click();
    const secondSecret = await page.locator('#new-secret').innerText();
    expect(secondSecret)
      .to.match(/^whsec_/)
      .and.not.equal(firstSecret);
    const before = p.receiver.requests.length;
    await insertRow();
    const [next] = (await p.receiver.waitFor(before + 1)).slice(before);
    expect(verifies(secondSecret, next!), 'new secret').to.equal(true);
    expect(verifies(firstSecret, next!), 'old secret').to.equal(true);
    expect(verifies(`whsec_${randomBytes(32).toString('base64')}`, next!), 'another secret').to.equal(false);
  });

  it('readable on a phone: the subscription with a delivery open, and the list', async () => {
    await openNewest('delivered');
    await screenshot('subscription');
    await phonePass('subscription');
    await page.getByRole('link', { name: '← All subscriptions' }).click();
    await page.locator('table').getByText('Active').waitFor();
    await checkAccessibility('subscriptions list');
    await screenshot('subscriptions');
    await phonePass('subscriptions');
  });

  it('edits the filter with operators, then as JSON; a filter rows cannot show opens as JSON; a refusal names its place', async () => {
    const edit = async () => {
      await page.locator('table').getByRole('link', { name: 'orders' }).click();
      await page.getByRole('link', { name: 'Edit' }).click();
      await page.getByRole('heading', { name: 'Edit subscription' }).waitFor();
      await page.locator('#filter-as-json').waitFor({ state: 'attached' }); // the form, after "Loading…"
    };
    const saved = async () => (await p.t.ctx.pool.query('SELECT filter FROM walgate.webhooks WHERE id = $1', [webhookId])).rows[0].filter;
    const back = () => page.getByRole('link', { name: '← All subscriptions' }).click();
    await edit();
    expect(await page.locator('.filter-op').evaluateAll((els) => els.map((e) => (e as unknown as { value: string }).value))).to.deep.equal([
      '$eq',
    ]);
    await page.getByRole('button', { name: 'Add a condition' }).click();
    const second = page.locator('.filter-row').nth(1);
    await second.locator('.filter-col').selectOption('amount');
    await second.locator('.filter-op').selectOption('$gt');
    await second.locator('.filter-val').fill('10');
    await checkAccessibility('filter operators');
    await page.getByRole('button', { name: 'Save' }).click();
    // Saved: the subscription's page shows the filter.
    await page.locator('dd').getByText('{"amount":{"$gt":10},"status":"paid"}').waitFor(); // as jsonb orders keys
    expect(await saved()).to.deep.equal({ status: 'paid', amount: { $gt: 10 } });

    await back();
    await edit();
    await page.getByLabel(/Write the filter as JSON/).check();
    expect(JSON.parse(await page.locator('#filter-json').inputValue())).to.deep.equal({ status: 'paid', amount: { $gt: 10 } });
    await page.locator('#filter-json').fill('{"amount": {"$gt": "ten"}}');
    await page.getByRole('button', { name: 'Save' }).click();
    await page.getByText(/VALIDATION_ERROR.*filter\.amount\.\$gt: must be a number/).waitFor();
    statusLines.length = 0; // that refusal is the expected error line, and Chromium logs its 400
    const refusedPatch = (x: string) => x.includes('status of 400') && x.includes(`/_webhooks/${webhookId}`);
    for (let waited = 0; !problems.some(refusedPatch) && waited < 5000; waited += 50) await new Promise((r) => setTimeout(r, 50));
    const logged = problems.findIndex(refusedPatch);
    if (logged >= 0) problems.splice(logged, 1);
    const or = { $or: [{ status: 'paid' }, { amount: { $gte: '1000.00' } }] };
    await page.locator('#filter-json').fill(JSON.stringify(or));
    await page.getByRole('button', { name: 'Save' }).click();
    await page.locator('dd').getByText(JSON.stringify(or)).waitFor();
    expect(await saved()).to.deep.equal(or);

    await back();
    await edit();
    expect(await page.getByLabel(/Write the filter as JSON/).isChecked()).to.equal(true);
    expect(JSON.parse(await page.locator('#filter-json').inputValue())).to.deep.equal(or);
    await page.getByRole('link', { name: 'Cancel' }).click();
    await page.locator('dd').getByText(JSON.stringify(or)).waitFor();
    await back();
    await page.locator('table').getByText('Active').waitFor();
  });

  it('deletes the subscription after a confirmation', async () => {
    await page.locator('table').getByRole('link', { name: 'orders' }).click();
    await page.getByRole('button', { name: 'Delete' }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Cancel' }).click();
    expect((await p.t.ctx.pool.query('SELECT 1 FROM walgate.webhooks WHERE id = $1', [webhookId])).rowCount).to.equal(1);
    await page.getByRole('button', { name: 'Delete' }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Delete' }).click();
    await page.getByRole('heading', { name: 'Subscriptions' }).waitFor();
    await page.getByText('No subscription in this environment yet.').waitFor();
    expect((await p.t.ctx.pool.query('SELECT 1 FROM walgate.webhooks WHERE id = $1', [webhookId])).rowCount).to.equal(0);
  });

  it('a subscription that cannot follow its table shows a problem badge; an open capture gap a banner until acknowledged', async () => {
    await p.writer.query('CREATE TABLE shop_master.drifting (id int PRIMARY KEY, region text)');
    const drifting = await insertSubscription(p.t.ctx, {
      projectId: 'shop',
      environment: 'master',
      schema: 'shop_master',
      table: 'drifting',
      filter: { region: 'eu' },
    });
    await p.writer.query('ALTER TABLE shop_master.drifting DROP COLUMN region');
    await p.t.ctx.pool.query(
      `INSERT INTO walgate.capture_gaps (id, project_id, environment, slot_name, reason, from_lsn, to_lsn, from_time, to_time, webhook_ids)
       VALUES ('gap_console', 'shop', 'master', 'walgate_x', 'slot_lost', '0/10', '0/20', now() - interval '1 hour', now(), $1)`,
      [[drifting]],
    );
    await page.reload(); // the list, read again
    await page.getByRole('heading', { name: 'Subscriptions' }).waitFor();
    await page.locator('#gap-banner').getByText('Changes were lost: 1 capture gap.').waitFor();
    await page.getByText('Problem: FILTER_COLUMN_MISSING').waitFor();
    await checkAccessibility('problems and gaps');
    await page.locator('#gap-banner').getByRole('button', { name: 'Acknowledge' }).click();
    await page.getByText('Gaps acknowledged.').waitFor();
    await eventually(
      () => page.locator('#gap-banner').count(),
      (n) => n === 0,
    );
    const { rows } = await p.t.ctx.pool.query(`SELECT acknowledged_at FROM walgate.capture_gaps WHERE id = 'gap_console'`);
    expect(rows[0].acknowledged_at).to.be.an.instanceOf(Date);
    await page.getByRole('link', { name: 'drifting' }).click();
    await page
      .locator('#problems')
      .getByText(/filter names columns the table no longer has \(region\)/)
      .waitFor();
    await page.goto(`${p.t.url}/console#/`);
    await page.getByRole('heading', { name: 'Subscriptions' }).waitFor();
    await p.t.ctx.pool.query('DELETE FROM walgate.webhooks WHERE id = $1', [drifting]);
  });

  it('no console error, page error or error line over the whole scenario; the token and the header value were in no URL, log line or page', async () => {
    markup.push(await page.content());
    expect(requested.length).to.be.above(20);
    expect(requested.filter((u) => u.includes(token) || u.includes(API_KEY))).to.deep.equal([]);
    expect(p.t.logs.lines.length).to.be.above(10);
    expect(p.t.logs.text).not.to.contain(token).and.not.contain(API_KEY);
    expect(markup.filter((html) => html.includes(token) || html.includes(API_KEY))).to.deep.equal([]);
    expect(elsewhere, 'requests to other origins').to.deep.equal([]);
    expect(problems, 'console errors and warnings (CSP violations show here)').to.deep.equal([]);
    expect(statusLines, 'errors the console reported').to.deep.equal([]);
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByRole('heading', { name: 'Sign in' }).waitFor();
    expect(await page.evaluate('sessionStorage.length')).to.equal(0);
  });
});
