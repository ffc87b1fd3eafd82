import { expect } from 'chai';
import type { Browser, Page } from 'playwright-core';
import { eventually, startPipeline, type Pipeline } from '../delivery/support.js';
import { expectAccessible, signedInConsole } from './support.js';

// The console and a subscription's delivery settings: the form sets a throttle and a retry
// schedule, the subscription's page shows both, and, once its changes come faster than its limit,
// how many requests waited for their turn.

describe('delivery console: throttle and retry schedule', function () {
  this.timeout(120_000);
  let p: Pipeline;
  let browser: Browser;
  let page: Page;
  const problems: string[] = [];

  before(async function () {
    this.timeout(15 * 60_000); // a first run may have to install Chromium
    p = await startPipeline();
    ({ browser, page } = await signedInConsole(p.t.url, await p.t.managementToken('shop'), problems));
  });
  after(async () => {
    await browser?.close();
    await p?.close();
  });

  it('creates a subscription with 5 requests a second and its own schedule; its page shows both and the waits', async () => {
    await page.getByRole('link', { name: 'New subscription' }).click();
    await page.locator('#table').waitFor();
    await page.getByLabel('Table').selectOption('orders');
    await page.getByLabel('Receiver URL (https)').fill(`${p.receiver.url}/hook`);
    await page.getByLabel(/Requests per second at most/).fill('5');
    await page.getByLabel(/Retry schedule/).fill('0, 1000, 5000');
    await page.getByRole('button', { name: 'Create' }).click();
    await page.getByRole('heading', { name: 'Subscription created' }).waitFor();
    const { rows } = await p.t.ctx.pool.query('SELECT rate_limit_per_second, rate_limit_burst, retry_delays_ms FROM walgate.webhooks');
    expect(rows).to.deep.equal([{ rate_limit_per_second: 5, rate_limit_burst: 1, retry_delays_ms: [0, 1000, 5000] }]);
    await page.getByRole('link', { name: 'Open the subscription' }).click();
    expect(await page.locator('#rate-limit').innerText()).to.equal('at most 5 requests a second (burst 1)');
    expect(await page.locator('#retry-schedule').innerText()).to.equal('0, 1000, 5000 ms');
    expect(await page.locator('#throttled').innerText()).to.match(/^0 requests waited/);

    // 20 changes at once to a receiver that takes 5 a second: most wait for their turn.
    await p.writer.query(`INSERT INTO shop_master.orders SELECT g, 'paid', 1 FROM generate_series(1, 20) g`);
    await eventually(
      async () => p.receiver.requests.length,
      (n) => n === 20,
      20_000,
    );
    // At 5 a second with a burst of 1, the 20 went out over at least 3.8 s.
    const span = p.receiver.requests[19]!.at - p.receiver.requests[0]!.at;
    expect(span, 'ms from the first request to the 20th').to.be.at.least(3500);
    // Every wait ended before its request was sent, and the leader adds its tally to the rollup
    // every 5 s: a little more than 5 s after the 20th request, the rollup holds them all (read
    // sooner, the page showed a part: 14 of them once).
    await new Promise((r) => setTimeout(r, 5500));
    const { rows: tally } = await p.t.ctx.pool.query('SELECT coalesce(sum(throttled), 0)::int AS n FROM walgate.delivery_minutes');
    const waited = tally[0].n as number;
    expect(waited, 'requests that waited: most of them').to.be.within(10, 19);
    // The page polls: it shows that figure.
    await page
      .locator('#throttled')
      .getByText(new RegExp(`^${waited} requests waited`))
      .waitFor({ timeout: 20_000 });
    await expectAccessible(page, 'a throttled subscription');
    expect(problems).to.deep.equal([]);
  });
});
