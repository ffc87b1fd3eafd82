import { expect } from 'chai';
import type { TestApi } from '../../support/api.js';
import type { HttpClient } from '../../support/http.js';
import { bearer, PASSWORD, signUpAndConfirm, startAuthApi } from '../support.js';
import { claimsOf, enrolTotp, totp } from './support.js';

// Recovery codes (each works once), the aal2 that removing a factor needs, the audit trail, the
// operator's removal, and an environment whose `mfa` setting is `required`.

describe('auth mfa: recovery codes, aal2-only changes, required mode', function () {
  this.timeout(60_000);
  let t: TestApi;
  let http: HttpClient;
  let manage: ReturnType<typeof bearer>;

  before(async () => {
    t = await startAuthApi();
    ({ http } = await t.provision({ projectId: 'recovery', name: 'master' }));
    manage = bearer(await t.managementToken('recovery'));
  });
  after(() => t.close());

  const login = (email: string) => http.post('/auth/login', { email, password: PASSWORD });

  it('each recovery code signs in once (amr [pwd, recovery], aal2), and its use is an audit event', async () => {
    const a = await signUpAndConfirm(t, http);
    const { recoveryCodes } = await enrolTotp(t, http, a);
    const [first, second] = recoveryCodes as [string, string];

    const used = await http.post('/auth/mfa/challenge', { mfaToken: (await login(a.email)).body.mfaToken, code: first });
    expect(used.status, JSON.stringify(used.body)).to.equal(200);
    const claims = claimsOf(used.body.accessToken);
    expect(claims.amr).to.deep.equal(['pwd', 'recovery']);
    expect(claims.aal).to.equal('aal2');

    const again = await http.post('/auth/mfa/challenge', { mfaToken: (await login(a.email)).body.mfaToken, code: first });
    expect(again.status).to.equal(400);
    expect(again.body.error).to.equal('AUTH_INVALID_CODE');
    // Typed in capitals without the dash, another code still works.
    const typed = second.replace('-', '').toUpperCase();
    expect((await http.post('/auth/mfa/challenge', { mfaToken: (await login(a.email)).body.mfaToken, code: typed })).status).to.equal(200);

    const factors = await http.get('/auth/mfa/factors', bearer(used.body.accessToken));
    expect(factors.body.recoveryCodesLeft).to.equal(8);
    const stored = await t.ctx.pool.query('SELECT code_hash FROM walgate.mfa_recovery_codes WHERE user_id = $1', [a.userId]);
    expect(stored.rows).to.have.length(10);
    for (const row of stored.rows) expect(row.code_hash.toString('utf8')).not.to.include(first.slice(0, 5));

    const events = await http.get(`/api/rest/_users/${a.userId}/events`, manage);
    const types = (events.body.events as Array<{ type: string }>).map((e) => e.type);
    expect(types).to.include('user.mfa_factor_added');
    expect(types.filter((x) => x === 'user.recovery_code_used')).to.have.length(2);
  });

  it('a new set of recovery codes and removing a factor need an aal2 token; then login asks for nothing more', async () => {
    const a = await signUpAndConfirm(t, http);
    const { secret, factorId, recoveryCodes } = await enrolTotp(t, http, a);
    // The token from before the enrolment is aal1: it cannot remove the factor.
    const weak = await http.delete(`/auth/mfa/factors/${factorId}`, bearer(a.accessToken));
    expect(weak.status).to.equal(403);
    expect(weak.body.error).to.equal('AUTH_MFA_REQUIRED');
    expect((await http.post('/auth/mfa/recovery-codes', undefined, bearer(a.accessToken))).body.error).to.equal('AUTH_MFA_REQUIRED');

    t.clock.advanceSeconds(30);
    const strong = await http.post('/auth/mfa/challenge', {
      mfaToken: (await login(a.email)).body.mfaToken,
      factorId,
      code: totp(secret, t.clock.now()),
    });
    const token = strong.body.accessToken as string;
    const fresh = await http.post('/auth/mfa/recovery-codes', undefined, bearer(token));
    expect(fresh.status).to.equal(200);
    expect(fresh.body.recoveryCodes).to.have.length(10);
    // The old set is gone.
    const old = await http.post('/auth/mfa/challenge', { mfaToken: (await login(a.email)).body.mfaToken, code: recoveryCodes[0] });
    expect(old.body.error).to.equal('AUTH_INVALID_CODE');

    // Another user's factor is as unknown as a made-up id (that user signs in with their own factor).
    const other = await signUpAndConfirm(t, http);
    const theirs = await enrolTotp(t, http, other);
    t.clock.advanceSeconds(30);
    const otherLogin = await login(other.email);
    const otherPair = await http.post('/auth/mfa/challenge', {
      mfaToken: otherLogin.body.mfaToken,
      factorId: theirs.factorId,
      code: totp(theirs.secret, t.clock.now()),
    });
    const foreign = await http.delete(`/auth/mfa/factors/${factorId}`, bearer(otherPair.body.accessToken));
    expect(foreign.status).to.equal(404);
    expect(foreign.body.error).to.equal('MFA_FACTOR_NOT_FOUND');
    const removed = await http.delete(`/auth/mfa/factors/${factorId}`, bearer(token));
    expect(removed.status).to.equal(200);
    const after = await login(a.email);
    expect(after.body).to.have.property('accessToken');
    expect(after.body).not.to.have.property('mfaRequired');
    expect(claimsOf(after.body.accessToken).amr).to.deep.equal(['pwd']);
  });

  it("an operator sees a user's factors and removes one (admin API); the audit row names the token", async () => {
    const a = await signUpAndConfirm(t, http);
    const { factorId } = await enrolTotp(t, http, a);
    const detail = await http.get(`/api/rest/_users/${a.userId}`, manage);
    expect(detail.status).to.equal(200);
    expect(detail.body.factors).to.have.length(1);
    expect(detail.body.factors[0]).to.include({ id: factorId, type: 'totp', name: 'phone' });
    expect(JSON.stringify(detail.body.factors)).not.to.match(/secret/i);

    const gone = await http.delete(`/api/rest/_users/${a.userId}/factors/${factorId}`, manage);
    expect(gone.status).to.equal(204);
    expect((await http.delete(`/api/rest/_users/${a.userId}/factors/${factorId}`, manage)).body.error).to.equal('MFA_FACTOR_NOT_FOUND');
    expect((await login(a.email)).body).to.have.property('accessToken');
    const events = await http.get(`/api/rest/_users/${a.userId}/events?type=user.mfa_factor_removed`, manage);
    expect(events.body.events).to.have.length(1);
    expect(events.body.events[0].actor).to.be.a('string').and.not.equal('');
    expect(events.body.events[0].details).to.deep.include({ factorId, factorType: 'totp' });
  });

  it('mfa: required — aal1 tokens may enrol, list factors and log out; every other call is 403 AUTH_MFA_REQUIRED', async () => {
    const { http: req } = await t.provision({ projectId: 'strict', name: 'master' });
    const strictManage = bearer(await t.managementToken('strict'));
    const patched = await req.patch('/api/rest/_environment', { mfa: 'required' }, strictManage);
    expect(patched.status, JSON.stringify(patched.body)).to.equal(200);
    expect(patched.body.mfa).to.equal('required');

    const a = await signUpAndConfirm(t, req);
    expect(claimsOf(a.accessToken).aal).to.equal('aal1');
    for (const [method, path] of [
      ['get', '/auth/me'],
      ['get', '/auth/sessions'],
      ['patch', '/auth/me'],
    ] as const) {
      const r =
        method === 'patch'
          ? await req.patch(path, { userMetadata: {} }, bearer(a.accessToken))
          : await req.get(path, bearer(a.accessToken));
      expect(r.status, `${method} ${path}`).to.equal(403);
      expect(r.body.error).to.equal('AUTH_MFA_REQUIRED');
    }
    const gqlMe = await req.post('/graphql', { query: '{ me { user { id } } }' }, bearer(a.accessToken));
    expect(gqlMe.body.errors[0].extensions.code).to.equal('AUTH_MFA_REQUIRED');

    expect((await req.get('/auth/mfa/factors', bearer(a.accessToken))).status).to.equal(200);
    const { secret, factorId } = await enrolTotp(t, req, a);
    t.clock.advanceSeconds(30);
    const login2 = await req.post('/auth/login', { email: a.email, password: PASSWORD });
    const pair = await req.post('/auth/mfa/challenge', { mfaToken: login2.body.mfaToken, factorId, code: totp(secret, t.clock.now()) });
    expect((await req.get('/auth/me', bearer(pair.body.accessToken))).status).to.equal(200);
    expect((await req.post('/auth/logout', undefined, bearer(a.accessToken))).status).to.equal(200);

    // Optional again: the same aal1 kind of token is accepted.
    const b = await signUpAndConfirm(t, http);
    expect((await http.get('/auth/me', bearer(b.accessToken))).status).to.equal(200);
  });
});
