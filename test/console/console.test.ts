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
      if (m.type() === 'error' || m.type() === 'warning') problems.push(`${m.type()}: ${m.text()}`);
    });
    page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
  });
  after(async () => {
    await browser?.close();
    await p?.close();
    if (shots && !process.env.CONSOLE_SCREENSHOTS) await rm(shots, { recursive: true, force: true });
  });

  let firstSecret: string;
  let webhookId: string;

  it('signs in with the keyboard; the page and its assets come from walgate under a strict CSP', async () => {
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
    expect(await page.evaluate('sessionStorage.length')).to.equal(1);
    expect(await page.evaluate('localStorage.length')).to.equal(0);
  });

  it('creates a subscription with the tables and columns to pick from; the secret is shown once', async () => {
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
    await page.getByLabel(/Row ordering/).check();
    await checkAccessibility('create form');
    await screenshot('create');
    await page.getByRole('button', { name: 'Create' }).click();
    await page.getByRole('heading', { name: 'Subscription created' }).waitFor();
    firstSecret = await page.locator('#new-secret').innerText();
    expect(firstSecret).to.match(/^whsec_[A-Za-z0-9+/]{43}=$/);
    const { rows } = await p.t.ctx.pool.query('SELECT id, events, filter, ordering FROM walgate.webhooks');
    expect(rows).to.have.length(1);
    expect(rows[0]).to.deep.include({ events: ['INSERT', 'UPDATE'], filter: { status: 'paid' }, ordering: 'row' });
    webhookId = rows[0].id;
    await page.getByRole('link', { name: 'Open the subscription' }).click();
    await page.locator('#state').getByText('Active').waitFor();
    await page.getByText('per row, in commit order').waitFor();
    expect(await page.content()).not.to.contain(firstSecret); // shown once: gone from the page
  });

  it('a row written with pg appears as delivered without a reload, signed with the secret', async () => {
    await insertRow();
    await page.locator('#deliveries tbody tr').first().getByText('delivered').waitFor({ timeout: 15_000 });
    const [received] = await p.receiver.waitFor(1);
    expect(verifies(firstSecret, received!)).to.equal(true);
    await page.locator('.chart rect.ok').first().waitFor();
  });

  it('a failing receiver: the attempts, their status, error and answer', async () => {
    p.receiver.behave = () => ({ status: 503, body: 'down for maintenance' });
    await insertRow();
    await page.locator('#deliveries tbody tr').first().getByText('dead').waitFor({ timeout: 15_000 });
    expect(await statuses()).to.deep.equal(['dead', 'delivered']);
    await page
      .locator('#deliveries tbody tr')
      .first()
      .getByRole('button', { name: /^Details/ })
      .click();
    await page.locator('#delivery-status').getByText('dead').waitFor();
    const attempts = await page.locator('#delivery table tbody tr').allInnerTexts();
    expect(attempts).to.have.length(5);
    for (const a of attempts) expect(a).to.contain('503').and.contain('HTTP 503').and.contain('down for maintenance');
    expect(await page.locator('pre.payload').innerText()).to.contain('"status": "paid"');
    await page.locator('.chart rect.fail').first().waitFor();
    expect(await page.locator('#failures').innerText()).to.equal('5');
    await checkAccessibility('subscription with a dead delivery open');
    await screenshot('deliveries');
  });

  it('replays the dead letters, asking first with their count (keyboard)', async () => {
    p.receiver.behave = () => ({ status: 200 });
    await page.getByRole('button', { name: 'Replay dead letters…' }).click();
    const dialog = page.getByRole('dialog');
    await dialog.getByText('Replay 1 dead delivery?').waitFor();
    await checkAccessibility('replay confirmation');
    await page.keyboard.press('Tab'); // from Cancel to Replay
    await page.keyboard.press('Enter');
    await page.getByText('Replayed 1 dead delivery.').waitFor();
    await eventually(statuses, (all) => all.length === 2 && all.every((s) => s === 'delivered'), 15_000);
  });

  it('retries one delivered delivery: a further attempt in its log', async () => {
    // The replayed one: a change delivered at its first attempt is not stored, so only a delivery
    // that was parked (and kept its payload) can be sent again.
    await page
      .locator('#deliveries tbody tr')
      .first()
      .getByRole('button', { name: /^Details/ })
      .click();
    await page.locator('#delivery-status').getByText('delivered').waitFor();
    const attemptsBefore = await page.locator('#delivery table tbody tr').count();
    const before = p.receiver.requests.length;
    await page.getByRole('button', { name: 'Retry now' }).click();
    await p.receiver.waitFor(before + 1);
    // The open delivery is reloaded by its button until the new attempt shows.
    const until = Date.now() + 15_000;
    while ((await page.locator('#delivery table tbody tr').count()) <= attemptsBefore) {
      expect(Date.now(), "the retry's attempt in the log").to.be.below(until);
      await page.getByRole('button', { name: 'Reload' }).click();
      await page.waitForTimeout(250);
    }
    expect(await page.locator('#delivery table tbody tr').last().innerText()).to.contain('200');
  });

  it('rotates the secret: the next delivery verifies with the new and with the old secret', async () => {
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

  it('pauses and resumes; lists the subscription with its state; readable on a phone', async () => {
    await page.getByRole('button', { name: 'Pause' }).click();
    await page.locator('#state').getByText('Paused').waitFor();
    await page.getByRole('link', { name: '← All subscriptions' }).click();
    await page.locator('table').getByText('Paused').waitFor();
    await checkAccessibility('subscriptions list');
    await screenshot('subscriptions');
    await page.getByRole('link', { name: 'orders' }).click();
    await page.getByRole('button', { name: 'Resume' }).click();
    await page.locator('#state').getByText('Active').waitFor();
    await screenshot('subscription');

    await page.setViewportSize({ width: 390, height: 844 });
    await page.waitForTimeout(300);
    const overflow = await page.evaluate('document.documentElement.scrollWidth - document.documentElement.clientWidth');
    expect(overflow, 'no sideways scrolling of the page on a phone').to.be.at.most(0);
    await checkAccessibility('subscription on a phone');
    await page.screenshot({ path: path.join(shots, 'console-phone.png') });
    await page.setViewportSize({ width: 1280, height: 900 });
  });

  it('deletes the subscription after a confirmation', async () => {
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

  it('the token was in no URL requested, no log line and no page markup; nothing came from elsewhere, no CSP complaint', async () => {
    markup.push(await page.content());
    expect(requested.length).to.be.above(20);
    expect(requested.filter((u) => u.includes(token))).to.deep.equal([]);
    expect(p.t.logs.lines.length).to.be.above(10);
    expect(p.t.logs.text).not.to.contain(token);
    expect(markup.filter((html) => html.includes(token))).to.deep.equal([]);
    expect(elsewhere, 'requests to other origins').to.deep.equal([]);
    expect(problems, 'console errors and warnings (CSP violations show here)').to.deep.equal([]);
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByRole('heading', { name: 'Sign in' }).waitFor();
    expect(await page.evaluate('sessionStorage.length')).to.equal(0);
  });
});
