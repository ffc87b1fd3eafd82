import type { ChildProcess } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import { setTimeout as sleep } from 'node:timers/promises';
import { expect } from 'chai';
import { eventually, startPipeline, type Pipeline } from '../../delivery/support.js';
import { HttpClient } from '../../support/http.js';
import { TestReceiver, verifies } from '../../support/receiver.js';
import { testCertificates } from '../../support/tls.js';
import { killDaemon, spawnTailerDaemon } from '../../tailer/support.js';
import { GENEROUS_LIMITS, PASSWORD, uniqueEmail } from '../support.js';

// Auth events as webhooks: a subscription on `_auth_events` receives its environment's audit rows,
// captured from the WAL like any table change — so an event is delivered if and only if the change
// that appended it committed.

const SECRET = 'whsec_' + Buffer.alloc(32, 7).toString('base64');

async function subscribe(p: Pipeline, environment: string, url: string, extra: Record<string, unknown> = {}): Promise<string> {
  const token = await p.t.managementToken('shop');
  const api = new HttpClient(p.t.url, { authorization: `Bearer ${token}`, 'x-project-id': 'shop', environment });
  const res = await api.post('/api/rest/_webhooks', {
    projectId: 'shop',
    environment,
    table: '_auth_events',
    events: ['INSERT'],
    url,
    secret: SECRET,
    filter: { type: 'user.signed_up' },
    ...extra,
  });
  expect(res.status, JSON.stringify(res.body)).to.equal(201);
  return res.body.webhook.id;
}

describe('auth events delivered by webhooks (`_auth_events`)', function () {
  this.timeout(180_000);
  let p: Pipeline;
  let master: HttpClient;
  let staging: HttpClient;

  before(async () => {
    p = await startPipeline({}, {}, { rateLimits: GENEROUS_LIMITS });
    master = p.t.http.with({ 'x-project-id': 'shop', environment: 'master' });
    ({ http: staging } = await p.t.provision({ projectId: 'shop', name: 'staging' }));
  });
  after(() => p.close());

  it('one signed delivery per signup, none for logins nor for another environment; a signup that fails leaves no event', async () => {
    const hook = await subscribe(p, 'master', `${p.receiver.url}/auth`);
    const emails = Array.from({ length: 8 }, () => uniqueEmail('sub'));
    const ids = new Map<string, string>();
    for (const email of emails) {
      const r = await master.post('/auth/signup', { email, password: PASSWORD });
      expect(r.status).to.equal(201);
      ids.set(r.body.userId, email);
    }
    // Logins, failed logins and another environment's signups are not for this subscription.
    await p.t.ctx.pool.query('UPDATE walgate.users SET email_verified_at = now() WHERE email = ANY($1)', [emails]);
    for (const email of emails.slice(0, 3)) expect((await master.post('/auth/login', { email, password: PASSWORD })).status).to.equal(200);
    await master.post('/auth/login', { email: emails[0], password: 'wrong password 12345' });
    expect((await staging.post('/auth/signup', { email: uniqueEmail('staging'), password: PASSWORD })).status).to.equal(201);
    // Concurrent signups with one address: one commits, the others fail and append nothing.
    const raced = uniqueEmail('race');
    const race = await Promise.all(Array.from({ length: 5 }, () => master.post('/auth/signup', { email: raced, password: PASSWORD })));
    expect(race.map((r) => r.status).sort()).to.deep.equal([201, 409, 409, 409, 409]);
    ids.set(race.find((r) => r.status === 201)!.body.userId, raced);

    await p.receiver.waitFor(ids.size, 30_000);
    // A marker after everything: once it has arrived, nothing else is on its way.
    const marker = uniqueEmail('marker');
    const last = await master.post('/auth/signup', { email: marker, password: PASSWORD });
    ids.set(last.body.userId, marker);
    await p.receiver.waitFor(ids.size, 30_000);
    await sleep(300);

    const bodies = p.receiver.requests.map((r) => {
      expect(verifies(SECRET, r), 'signed with the subscription secret').to.equal(true);
      return JSON.parse(r.body);
    });
    expect(bodies).to.have.length(ids.size);
    expect(new Set(bodies.map((b) => b.record.user_id))).to.deep.equal(new Set(ids.keys()));
    for (const b of bodies) {
      expect(b).to.include({ table: '_auth_events', event: 'INSERT', project_id: 'shop', environment: 'master' });
      expect(b.record).to.include({ type: 'user.signed_up', project_id: 'shop', environment: 'master' });
      expect(b.record.details).to.deep.equal({ email: ids.get(b.record.user_id) });
    }
    expect((await p.delivery(hook)).every((d) => d.status === 'delivered')).to.equal(true);
  });

  it('a subscription without a filter, with select, gets every type; an unknown column is refused', async () => {
    const receiver = await p.newReceiver();
    await subscribe(p, 'staging', `${receiver.url}/all`, { filter: null, select: ['type', 'user_id'] });
    const email = uniqueEmail('all');
    await staging.post('/auth/signup', { email, password: PASSWORD });
    await staging.post('/auth/login', { email, password: 'wrong password 12345' });
    const requests = await receiver.waitFor(2, 30_000);
    const bodies = requests.map((r) => JSON.parse(r.body));
    expect(bodies.map((b) => b.record.type)).to.deep.equal(['user.signed_up', 'user.login_failed']);
    expect(Object.keys(bodies[0].record)).to.deep.equal(['type', 'user_id']);

    const token = await p.t.managementToken('shop');
    const api = new HttpClient(p.t.url, { authorization: `Bearer ${token}`, 'x-project-id': 'shop', environment: 'staging' });
    const bad = await api.post('/api/rest/_webhooks', {
      projectId: 'shop',
      environment: 'staging',
      table: '_auth_events',
      events: ['INSERT'],
      url: `${receiver.url}/x`,
      secret: SECRET,
      filter: { password: 'x' },
    });
    expect([bad.status, bad.body.violations?.[0]?.path]).to.deep.equal([400, 'filter.password']);
    // Deleting the last subscription on `_auth_events` leaves the audit table captured for the others.
    const list = await api.get('/api/rest/_webhooks');
    for (const w of list.body.webhooks) expect((await api.delete(`/api/rest/_webhooks/${w.id}`)).status).to.equal(204);
    const { rowCount } = await p.t.ctx.pool.query(
      `SELECT 1 FROM pg_publication_tables WHERE pubname = 'walgate' AND schemaname = 'walgate' AND tablename = 'auth_events'`,
    );
    expect(rowCount).to.equal(1);
  });

  it('the tailer SIGKILLed during 200 signups: every event delivered, each under one id', async function () {
    const receiver = new TestReceiver();
    await receiver.start();
    const caFile = `${p.t.config.dataDir}/auth-events-ca.pem`;
    await writeFile(caFile, (await testCertificates()).ca);
    const { http: killed } = await p.t.provision({ projectId: 'shop', name: 'killed' });
    // The in-process tailer steps aside: the daemon below is the only reader.
    await p.tailer.stop();
    await p.worker.stop(2000);
    await subscribe(p, 'killed', `${receiver.url}/k`);
    let child: ChildProcess | undefined;
    const launch = async () => {
      child = await spawnTailerDaemon(p.t, { WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true', NODE_EXTRA_CA_CERTS: caFile });
    };
    const kill = () => killDaemon(child);
    const total = 200;
    const userIds: string[] = [];
    const killedAt: number[] = [];
    await launch();
    try {
      let next = 0;
      const signups = Promise.all(
        Array.from({ length: 8 }, async () => {
          while (next < total) {
            next++;
            const r = await killed.post('/auth/signup', { email: uniqueEmail('kill'), password: PASSWORD });
            expect(r.status).to.equal(201);
            userIds.push(r.body.userId);
          }
        }),
      );
      for (let i = 0; i < 2; i++) {
        const before = receiver.requests.length;
        const until = Date.now() + 30_000;
        while (receiver.requests.length <= before && Date.now() < until) await sleep(25);
        await sleep(100 + i * 200);
        killedAt.push(receiver.requests.length);
        await kill();
        await launch();
      }
      await signups;
      expect(
        killedAt.some((n) => n > 0 && n < total),
        `deliveries at each kill: ${killedAt}`,
      ).to.equal(true);
      const idsByUser = await eventually(
        async () => {
          const m = new Map<string, Set<string>>();
          for (const r of receiver.requests) {
            const body = JSON.parse(r.body);
            m.set(body.record.user_id, (m.get(body.record.user_id) ?? new Set()).add(body.id));
          }
          return m;
        },
        (m) => m.size >= total,
        90_000,
      );
      expect(new Set(idsByUser.keys())).to.deep.equal(new Set(userIds));
      expect([...idsByUser.values()].every((ids) => ids.size === 1)).to.equal(true);
    } finally {
      await kill().catch(() => undefined);
      await receiver.stop();
    }
  });
});
