import { updateEnvironment } from '../../src/projects/environments.js';
import { expect } from 'chai';
import { hashToken } from '../../src/core/crypto/tokens.js';
import { Pruner } from '../../src/retention/pruner.js';
import type { TestApi } from '../support/api.js';
import type { HttpClient } from '../support/http.js';
import { bearer, signUpAndConfirm, startAuthApi, uniqueEmail } from '../auth/support.js';

// Retention of auth rows (the api daemon's pruner), on the Postgres stores, with the test clock:
// a session goes once it has expired and its last access token has too; used refresh tokens stay
// with their live session, so a replayed one still revokes the family.

const DAY = 24 * 3600 * 1000;

describe('retention: expired sessions, refresh tokens, codes, revocation entries and rate-limit rows', function () {
  this.timeout(30_000);
  let t: TestApi;
  let http: HttpClient;
  let pruner: Pruner;
  before(async () => {
    t = await startAuthApi();
    ({ http } = await t.provision({ projectId: 'shop', name: 'master' }));
    // Sessions here live by their idle lifetime alone (the absolute one is tested with sessions).
    await updateEnvironment(t.ctx.pool, 'shop', 'master', { sessionLifetimeSeconds: 365 * 86_400 });
    pruner = new Pruner(t.ctx, { scopes: ['auth'] });
  });
  after(() => t?.close());

  const rows = async (sql: string, params: unknown[] = []) => (await t.ctx.pool.query(sql, params)).rows;
  const sessionOf = async (userId: string) =>
    (await rows('SELECT id, revoked_at, revoked_reason FROM walgate.sessions WHERE user_id = $1', [userId]))[0];
  const tokensOf = async (sessionId: string) =>
    (await rows('SELECT token_hash FROM walgate.refresh_tokens WHERE session_id = $1', [sessionId])).map((r) =>
      (r.token_hash as Buffer).toString('hex'),
    );

  it('removes what has expired, keeps a live session with its used refresh tokens, and reuse detection still revokes the family', async () => {
    // A logs in once and is never seen again; B keeps refreshing.
    const a = await signUpAndConfirm(t, http);
    const b = await signUpAndConfirm(t, http);
    const b2 = (await http.post('/auth/refresh-token', { refreshToken: b.refreshToken })).body;
    // Other rows that expire: an unconfirmed signup's code, a logout's revocation entry, rate-limit counters.
    expect((await http.post('/auth/signup', { email: uniqueEmail('unconfirmed'), password: b.password })).status).to.equal(201);
    const c = await signUpAndConfirm(t, http);
    expect((await http.post('/auth/logout', undefined, bearer(c.accessToken))).status).to.equal(200);
    expect(await rows('SELECT 1 FROM walgate.verification_codes')).to.have.length(1);
    expect(await rows('SELECT 1 FROM walgate.revoked_sessions')).to.have.length(1);
    expect((await rows('SELECT 1 FROM walgate.rate_limits')).length).to.be.greaterThan(0);

    // 29 days on, B refreshes again: its session now lives to day 59; A's ends on day 30.
    t.clock.advance(29 * DAY);
    const b3 = (await http.post('/auth/refresh-token', { refreshToken: b2.refreshToken })).body;
    expect(b3.refreshToken).to.be.a('string');
    const bSession = await sessionOf(b.userId);
    expect(await tokensOf(bSession.id)).to.have.length(3);

    // Day 30 and a second: A's session has expired, but an access token issued just before could
    // still be valid (15 minutes): it stays for now. Codes, revocation entries and counters go.
    t.clock.advance(DAY + 1000);
    const first = await pruner.runPass();
    expect(await sessionOf(a.userId)).to.be.an('object');
    expect(first).to.include({ verification_codes: 1, revoked_sessions: 1 });
    expect(await rows('SELECT 1 FROM walgate.verification_codes')).to.have.length(0);
    expect(await rows('SELECT 1 FROM walgate.revoked_sessions')).to.have.length(0);
    expect(await rows('SELECT 1 FROM walgate.rate_limits')).to.have.length(0);

    // Once the longest access token is over too, A's session and its refresh tokens are gone.
    t.clock.advance(15 * 60 * 1000);
    const aSession = await sessionOf(a.userId);
    const second = await pruner.runPass();
    expect(second.sessions).to.be.at.least(1); // A's (and C's, revoked at logout and expired since)
    expect(await sessionOf(a.userId)).to.equal(undefined);
    expect(await tokensOf(aSession.id)).to.deep.equal([]);
    expect((await http.post('/auth/refresh-token', { refreshToken: a.refreshToken })).status).to.equal(401);

    // B's live session keeps all three tokens, the two used ones included...
    expect(await tokensOf(bSession.id)).to.have.members(
      [b.refreshToken, b2.refreshToken, b3.refreshToken].map((r) => hashToken(r).toString('hex')),
    );
    // ...so a replay of the first one is recognised as reuse and revokes the whole family.
    const replay = await http.post('/auth/refresh-token', { refreshToken: b.refreshToken });
    expect(replay.status).to.equal(401);
    expect(await sessionOf(b.userId)).to.include({ revoked_reason: 'refresh token reused' });
    expect((await http.post('/auth/refresh-token', { refreshToken: b3.refreshToken })).status).to.equal(401);

    const metrics = await t.ctx.metrics.text();
    expect(metrics).to.match(/walgate_retention_removed_rows_total\{table="sessions"\} [1-9]/);
    expect(metrics).to.match(/walgate_retention_removed_rows_total\{table="refresh_tokens"\} [1-9]/);
  });
});
