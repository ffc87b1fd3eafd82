import { createServer, type Server, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';
import { expect } from 'chai';
import { countQueuedMail } from '../../src/core/mail/outbox.js';
import type { TestApi } from '../support/api.js';
import type { HttpClient } from '../support/http.js';
import { bearer, PASSWORD, startAuthApi, uniqueEmail } from './support.js';

// Issue 12 item 9: e-mail leaves after the commit, through the courier. A mail server that
// accepts connections and then says nothing for 30 s must not hold requests or pooled connections.

/** An SMTP server that accepts each connection and never sends its greeting. */
async function stallingSmtp(): Promise<{ url: string; connections: () => number; close: () => Promise<void> }> {
  const sockets = new Set<Socket>();
  let count = 0;
  const server: Server = createServer((socket) => {
    count++;
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => undefined);
    setTimeout(() => socket.destroy(), 30_000).unref();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `smtp://127.0.0.1:${(server.address() as AddressInfo).port}`,
    connections: () => count,
    close: async () => {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

describe('auth: e-mail through the courier, after the commit', function () {
  this.timeout(60_000);
  let t: TestApi;
  let http: HttpClient;
  let stall: Awaited<ReturnType<typeof stallingSmtp>>;
  let account: { email: string; accessToken: string };

  before(async () => {
    stall = await stallingSmtp();
    // A small pool: before, each stalled e-mail held one of its connections inside a transaction.
    t = await startAuthApi({ env: { SMTP_URL: stall.url }, overrides: { poolMax: 3 } });
    ({ http } = await t.provision({ projectId: 'mailq', name: 'master' }));
    // An account made while the real test server was not in the way: confirm it by hand.
    const email = uniqueEmail('owner');
    const signup = await http.post('/auth/signup', { email, password: PASSWORD });
    expect(signup.status).to.equal(201);
    await t.ctx.pool.query('UPDATE walgate.users SET email_verified_at = now() WHERE email = $1', [email]);
    const login = await http.post('/auth/login', { email, password: PASSWORD });
    account = { email, accessToken: login.body.accessToken };
  });
  after(async () => {
    await t.close();
    await stall.close();
  });

  it('with the mail server stalled, signups and recoveries answer at once and every other endpoint answers normally', async () => {
    const started = Date.now();
    const emails = Array.from({ length: 6 }, () => uniqueEmail('stalled'));
    const signups = await Promise.all(emails.map((email) => http.post('/auth/signup', { email, password: PASSWORD }, { timeoutMs: 5000 })));
    expect(signups.map((r) => r.status)).to.deep.equal(Array(6).fill(201));
    const recoveries = await Promise.all(emails.map((email) => http.post('/auth/recover-password', { email }, { timeoutMs: 5000 })));
    expect(recoveries.map((r) => r.status)).to.deep.equal(Array(6).fill(200));
    // The accounts are committed although no e-mail has left.
    const { rows } = await t.ctx.pool.query('SELECT count(*)::int AS n FROM walgate.users WHERE email = ANY($1)', [emails]);
    expect(rows[0].n).to.equal(6);
    await new Promise((r) => setTimeout(r, 300));
    expect(stall.connections(), 'the mail server is being waited for').to.be.greaterThan(0);
    expect(await countQueuedMail(t.ctx.pool), 'mails queued or in flight').to.be.greaterThan(0);

    for (let i = 0; i < 3; i++) {
      const answers = await Promise.all([
        http.get('/auth/me', { ...bearer(account.accessToken), timeoutMs: 3000 }),
        http.post('/auth/login', { email: account.email, password: PASSWORD }, { timeoutMs: 3000 }),
        http.get('/auth/.well-known/jwks.json', { timeoutMs: 3000 }),
        http.post('/auth/signup', { email: uniqueEmail('more'), password: PASSWORD }, { timeoutMs: 3000 }),
      ]);
      expect(answers.map((r) => r.status)).to.deep.equal([200, 200, 200, 201]);
    }
    expect(Date.now() - started, 'all of it, while the mail server says nothing').to.be.below(15_000);
  });
});
