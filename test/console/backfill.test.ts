import { setTimeout as sleep } from 'node:timers/promises';
import { expect } from 'chai';
import pg from 'pg';
import type { Browser, Page } from 'playwright-core';
import { systemClock } from '../../src/core/clock.js';
import { launchChromium } from '../support/chromium.js';
import { startTestApi, type TestApi } from '../support/api.js';
import type { TestReceiver } from '../support/receiver.js';
import { insertSubscription } from '../support/subscriptions.js';
import { startBackfillPipeline, type BackfillPipeline } from '../tailer/backfill-support.js';

// The console's one-click repair of a capture gap: the gap banner's "Backfill" starts a backfill of
// every affected subscription (POST /api/rest/_gaps/{id}/backfill), and the rows the receiver
// missed arrive as READ events.

describe('delivery console: a capture gap repaired with one click', function () {
  this.timeout(120_000);
  let t: TestApi;
  let writer: pg.Client;
  let receiver: TestReceiver;
  let pipeline: BackfillPipeline;
  let browser: Browser;
  let page: Page;
  const problems: string[] = [];

  before(async function () {
    this.timeout(15 * 60_000); // a first run may have to install Chromium
    t = await startTestApi({ env: { WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true' }, overrides: { clock: systemClock } });
    await t.provision({ projectId: 'shop', name: 'master' });
    pipeline = await startBackfillPipeline(t, { pageRows: 10, pageBytes: 1 << 20, concurrency: 1 });
    ({ writer, receiver } = pipeline);
    await writer.query('CREATE TABLE shop_master.orders (id int PRIMARY KEY, status text)');
    await pipeline.startTailer();
    browser = await launchChromium();
    page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    page.setDefaultTimeout(15_000);
    page.on('console', (m) => {
      if (m.type() === 'error' || m.type() === 'warning') problems.push(`${m.type()}: ${m.text()}`);
    });
    page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
  });
  after(async () => {
    await browser?.close();
    await pipeline?.close();
    await t?.close();
  });

  it('the banner’s "Backfill" delivers the rows the gap lost to the affected subscription', async () => {
    // Rows written while nothing was captured: the subscription's receiver never saw them.
    await writer.query(`INSERT INTO shop_master.orders SELECT g, 'paid' FROM generate_series(1, 35) g`);
    const webhookId = await insertSubscription(t.ctx, {
      projectId: 'shop',
      environment: 'master',
      schema: 'shop_master',
      table: 'orders',
      url: `${receiver.url}/orders`,
    });
    await t.ctx.pool.query(
      `INSERT INTO walgate.capture_gaps (id, project_id, environment, slot_name, reason, from_lsn, to_lsn, from_time, to_time, webhook_ids)
       VALUES ('gap_console_backfill', 'shop', 'master', 'walgate_x', 'slot_lost', '0/10', '0/20', now() - interval '1 hour', now(), $1)`,
      [[webhookId]],
    );
    await page.goto(`${t.url}/console`);
    await page.locator('#project-id').fill('shop');
    await page.locator('#token').fill(await t.managementToken('shop'));
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('heading', { name: 'Subscriptions' }).waitFor();
    const banner = page.locator('#gap-banner');
    await banner.getByText('Changes were lost: 1 capture gap.').waitFor();
    expect(receiver.requests).to.deep.equal([]);

    await banner.getByRole('button', { name: 'Backfill' }).click();
    await page.getByText('Backfill started for 1 subscription.').waitFor();
    const { rows } = await t.ctx.pool.query(`SELECT webhook_id, gap_id FROM walgate.backfills`);
    expect(rows).to.deep.equal([{ webhook_id: webhookId, gap_id: 'gap_console_backfill' }]);

    const until = Date.now() + 30_000;
    const ids = () =>
      new Set(receiver.requests.filter((r) => r.headers['x-service-event'] === 'READ').map((r) => JSON.parse(r.body).record.id));
    while (ids().size < 35) {
      if (Date.now() > until) throw new Error(`only ${ids().size} of 35 rows arrived`);
      await sleep(50);
    }
    expect([...ids()].sort((a, b) => a - b)).to.deep.equal(Array.from({ length: 35 }, (_, i) => i + 1));
    // The banner stays until the operator acknowledges: the repair does not hide the gap.
    expect(await banner.count()).to.equal(1);
    expect(problems).to.deep.equal([]);
  });
});
