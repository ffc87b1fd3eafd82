import { expect } from 'chai';
import { createLogger } from '../../src/core/log.js';
import { Courier } from '../../src/core/mail/courier.js';
import { smtpMailer } from '../../src/core/mail/mailer.js';
import { enqueueMail } from '../../src/core/mail/outbox.js';
import { eventually } from '../delivery/support.js';
import type { TestApi } from '../support/api.js';
import { startAuthApi } from './support.js';

// The courier's claims: any number of api processes send from one outbox, each e-mail once; a
// mail server that never accepts makes an e-mail dead after MAIL_MAX_ATTEMPTS tries, its message
// (and code) dropped.

describe('auth: couriers share the outbox', function () {
  this.timeout(60_000);
  let t: TestApi;

  before(async () => {
    t = await startAuthApi();
    await t.ctx.courier.stop(); // the couriers below are the only senders
    await t.provision({ projectId: 'outbox', name: 'master' });
  });
  after(() => t.close());

  const courier = (smtpUrl: string, options: Partial<ConstructorParameters<typeof Courier>[4]> = {}) =>
    new Courier(t.ctx.pool, t.ctx.secrets, smtpMailer(smtpUrl, 'walgate <no-reply@example.com>'), createLogger('silent'), {
      concurrency: 4,
      maxAttempts: 5,
      retryMaxDelayMs: 1000,
      leaseMs: 60_000,
      pollMs: 50,
      ...options,
    });

  const enqueue = (to: string) =>
    enqueueMail(
      t.ctx.pool,
      t.ctx.secrets,
      {
        projectId: 'outbox',
        environment: 'master',
        userId: null,
        purpose: 'signup',
        mail: { to, subject: `For ${to}`, text: 'hello', html: '<p>hello</p>' },
      },
      t.clock.now(),
    );

  it('three couriers on one outbox send each of 60 e-mails exactly once', async () => {
    const addresses = Array.from({ length: 60 }, (_, i) => `shared${i}@example.com`);
    for (const a of addresses) await enqueue(a);
    const couriers = [courier(t.smtp.url), courier(t.smtp.url), courier(t.smtp.url)];
    for (const c of couriers) c.start();
    try {
      await eventually(
        async () => addresses.filter((a) => t.smtp.to(a).length > 0).length,
        (n) => n === addresses.length,
        30_000,
      );
      await new Promise((r) => setTimeout(r, 300));
      expect(addresses.map((a) => t.smtp.to(a).length)).to.deep.equal(addresses.map(() => 1));
      const { rows } = await t.ctx.pool.query(
        `SELECT state, count(*)::int AS n FROM walgate.mail_outbox WHERE recipient LIKE 'shared%' GROUP BY state`,
      );
      expect(rows).to.deep.equal([{ state: 'sent', n: 60 }]);
    } finally {
      for (const c of couriers) await c.stop();
    }
  });

  it('a mail server that is never there: dead after MAIL_MAX_ATTEMPTS tries, the message dropped, the error kept', async () => {
    await enqueue('never@example.com');
    const c = courier('smtp://127.0.0.1:1', { maxAttempts: 3 });
    c.start();
    try {
      const row = await eventually(
        async () => (await t.ctx.pool.query(`SELECT * FROM walgate.mail_outbox WHERE recipient = 'never@example.com'`)).rows[0],
        (r) => r.state === 'dead',
        30_000,
      );
      expect(row.attempts).to.equal(3);
      expect(row.message).to.equal(null);
      expect(row.last_error).to.match(/ECONNREFUSED|connect/i);
    } finally {
      await c.stop();
    }
  });
});
