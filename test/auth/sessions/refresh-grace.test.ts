import { expect } from 'chai';
import type { TestApi } from '../../support/api.js';
import type { HttpClient } from '../../support/http.js';
import { authEvents, bearer, signUpAndConfirm, startAuthApi } from '../support.js';

// Issue 36, finding 5: within the grace, one refresh token presented twice gave two different
// successors — two live chains of one session, each refreshing forever, reuse never detected.
// Now every exchange of a token within the grace returns the same successor (a new access token
// is fine), and once that successor has been used, the old token is reuse: the session ends.

describe('auth sessions: the refresh grace is idempotent, never a fork', function () {
  this.timeout(60_000);
  let t: TestApi;
  let http: HttpClient;
  let manage: ReturnType<typeof bearer>;

  before(async () => {
    t = await startAuthApi();
    ({ http } = await t.provision({ projectId: 'grace', name: 'master' }));
    manage = bearer(await t.managementToken('grace'));
  });
  after(() => t.close());

  const refresh = (refreshToken: string) => http.post('/auth/refresh-token', { refreshToken });
  const eventTypes = async (userId: string) =>
    ((await http.get(`/api/rest/_users/${userId}/events`, manage)).body.events as Array<{ type: string }>).map((e) => e.type);

  it('two concurrent exchanges of one token: identical successor refresh tokens, both access tokens work, one session', async () => {
    const a = await signUpAndConfirm(t, http);
    const [one, two] = await Promise.all([refresh(a.refreshToken), refresh(a.refreshToken)]);
    expect([one.status, two.status]).to.deep.equal([200, 200]);
    expect(one.body.refreshToken).to.be.a('string').and.not.equal(a.refreshToken);
    expect(two.body.refreshToken).to.equal(one.body.refreshToken);
    for (const r of [one, two]) expect((await http.get('/auth/me', bearer(r.body.accessToken))).status).to.equal(200);
    // A retry a few seconds later, still within the grace: the same successor again.
    t.clock.advanceSeconds(t.config.refreshReuseGraceSeconds - 1);
    const retry = await refresh(a.refreshToken);
    expect(retry.status).to.equal(200);
    expect(retry.body.refreshToken).to.equal(one.body.refreshToken);
    const sessions = await http.get('/auth/sessions', bearer(one.body.accessToken));
    expect(sessions.body.sessions).to.have.length(1);
    const stored = await t.ctx.pool.query(
      'SELECT count(*)::int AS n FROM walgate.refresh_tokens rt JOIN walgate.sessions s ON s.id = rt.session_id WHERE s.user_id = $1',
      [a.userId],
    );
    expect(stored.rows[0].n).to.equal(2); // the first token and its one successor: one chain
  });

  it('within the grace, the old token after its successor was used is reuse: the session ends, user.refresh_reuse is recorded', async () => {
    const a = await signUpAndConfirm(t, http);
    const reuseBefore = (await authEvents(t)).refresh_reuse ?? 0;
    const first = await refresh(a.refreshToken);
    const second = await refresh(first.body.refreshToken);
    expect(second.status).to.equal(200);
    // The chain moved on; presenting its first link again — inside the grace — forks it: refused.
    const fork = await refresh(a.refreshToken);
    expect(fork.status, JSON.stringify(fork.body)).to.equal(401);
    expect(fork.body.error).to.equal('AUTH_TOKEN_INVALID');
    expect((await http.get('/auth/me', bearer(second.body.accessToken))).status).to.equal(401);
    expect((await refresh(second.body.refreshToken)).status).to.equal(401);
    expect((await authEvents(t)).refresh_reuse).to.equal(reuseBefore + 1);
    const types = await eventTypes(a.userId);
    expect(types).to.include('user.refresh_reuse');
    expect(types).to.include('user.session_revoked');
  });

  it('after the grace, a fork attempt (the used token again, its successor unused) is reuse too', async () => {
    const a = await signUpAndConfirm(t, http);
    const first = await refresh(a.refreshToken);
    expect(first.status).to.equal(200);
    t.clock.advanceSeconds(t.config.refreshReuseGraceSeconds + 1);
    const fork = await refresh(a.refreshToken);
    expect(fork.status).to.equal(401);
    expect((await refresh(first.body.refreshToken)).status).to.equal(401);
    expect(await eventTypes(a.userId)).to.include('user.refresh_reuse');
  });
});
