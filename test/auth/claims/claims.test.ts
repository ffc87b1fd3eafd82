import { expect } from 'chai';
import type { TestApi } from '../../support/api.js';
import { walgate } from '../../support/cli.js';
import type { HttpClient } from '../../support/http.js';
import { claimsOf, enrolTotp, gql, totp } from '../mfa/support.js';
import { bearer, PASSWORD, signUpAndConfirm, startAuthApi, type Account } from '../support.js';

// Custom claims from the environment's own SQL function: set (and checked) through PATCH
// /api/rest/_environment, joined to every token minted — login, refresh, MFA completion, GraphQL —
// and, whenever the function misbehaves, no token at all with an error naming it.

describe('auth claims: the claims function', function () {
  this.timeout(60_000);
  let t: TestApi;
  let http: HttpClient;
  let manage: ReturnType<typeof bearer>;
  let a: Account;
  const q = (sql: string, values: unknown[] = []) => t.ctx.pool.query(sql, values);
  const setFunction = (claimsFunction: string | null) => http.patch('/api/rest/_environment', { claimsFunction }, manage);
  const login = (account: Account) => http.post('/auth/login', { email: account.email, password: PASSWORD });
  const liveSessions = async (userId: string) =>
    Number((await q('SELECT count(*) FROM walgate.sessions WHERE user_id = $1 AND revoked_at IS NULL', [userId])).rows[0].count);

  before(async () => {
    t = await startAuthApi();
    ({ http } = await t.provision({ projectId: 'claims', name: 'master' }));
    await t.provision({ projectId: 'rival', name: 'master' });
    manage = bearer(await t.managementToken('claims'));
    await q(`CREATE TABLE claims_master.accounts (user_id uuid PRIMARY KEY, plan text NOT NULL);
             CREATE TABLE claims_master.grants (user_id uuid NOT NULL, permission text NOT NULL);
             CREATE FUNCTION claims_master.token_claims(u jsonb, claims jsonb) RETURNS jsonb LANGUAGE sql STABLE AS $$
               SELECT jsonb_build_object(
                 'plan', coalesce((SELECT a.plan FROM claims_master.accounts a WHERE a.user_id = (u->>'id')::uuid), 'free'),
                 'permissions', coalesce((SELECT jsonb_agg(g.permission ORDER BY g.permission) FROM claims_master.grants g
                                           WHERE g.user_id = (u->>'id')::uuid), '[]'::jsonb),
                 'seen_email', u->>'email', 'seen_sid', claims->>'sid')
             $$;
             CREATE FUNCTION claims_master.sleepy(u jsonb, claims jsonb) RETURNS jsonb LANGUAGE sql AS $$
               SELECT pg_sleep(1); SELECT '{}'::jsonb $$;
             CREATE FUNCTION claims_master.sets_sub(u jsonb, claims jsonb) RETURNS jsonb LANGUAGE sql AS $$ SELECT '{"sub": "someone-else", "plan": "pro"}'::jsonb $$;
             CREATE FUNCTION claims_master.sets_org(u jsonb, claims jsonb) RETURNS jsonb LANGUAGE sql AS $$ SELECT '{"org_role": "owner"}'::jsonb $$;
             CREATE FUNCTION claims_master.huge(u jsonb, claims jsonb) RETURNS jsonb LANGUAGE sql AS $$ SELECT jsonb_build_object('x', repeat('a', 2000)) $$;
             CREATE FUNCTION claims_master.array_result(u jsonb, claims jsonb) RETURNS jsonb LANGUAGE sql AS $$ SELECT '[1]'::jsonb $$;
             CREATE FUNCTION claims_master.raises(u jsonb, claims jsonb) RETURNS jsonb LANGUAGE plpgsql AS $$
               BEGIN RAISE EXCEPTION 'secret internal detail'; END $$;
             CREATE FUNCTION claims_master.writes(u jsonb, claims jsonb) RETURNS jsonb LANGUAGE plpgsql AS $$
               BEGIN INSERT INTO accounts VALUES ((u->>'id')::uuid, 'stolen'); RETURN '{}'::jsonb; END $$;
             CREATE FUNCTION claims_master.loosens(u jsonb, claims jsonb) RETURNS jsonb LANGUAGE plpgsql AS $$
               BEGIN PERFORM set_config('statement_timeout', '0', false); PERFORM set_config('default_transaction_read_only', 'off', false);
                     PERFORM set_config('search_path', 'public', false); RETURN '{"loose": true}'::jsonb; END $$;
             CREATE FUNCTION claims_master.one_arg(u jsonb) RETURNS jsonb LANGUAGE sql AS $$ SELECT '{}'::jsonb $$;
             CREATE FUNCTION claims_master.returns_text(u jsonb, claims jsonb) RETURNS text LANGUAGE sql AS $$ SELECT '{}' $$;
             CREATE PROCEDURE claims_master.a_procedure(u jsonb, claims jsonb) LANGUAGE sql AS $$ SELECT 1 $$;
             CREATE FUNCTION rival_master.token_claims(u jsonb, claims jsonb) RETURNS jsonb LANGUAGE sql AS $$ SELECT '{}'::jsonb $$;`);
    a = await signUpAndConfirm(t, http);
    await q(`INSERT INTO claims_master.accounts VALUES ($1, 'pro')`, [a.userId]);
    await q(`INSERT INTO claims_master.grants VALUES ($1, 'invoices:write'), ($1, 'invoices:read')`, [a.userId]);
  });
  after(() => t.close());
  afterEach(async () => {
    expect((await setFunction(null)).status).to.equal(200);
  });

  it('PATCH refuses, with the reason, a function that does not exist, has the wrong signature or is not the environment’s own', async () => {
    const cases: Array<[unknown, RegExp]> = [
      ['claims_master.nope', /no function claims_master\.nope\(jsonb, jsonb\) exists/],
      ['claims_master.one_arg', /no function claims_master\.one_arg\(jsonb, jsonb\) exists/],
      ['claims_master.returns_text', /must return jsonb, not text/],
      ['claims_master.a_procedure', /not a plain function/],
      ['rival_master.token_claims', /this environment's schema claims_master/],
      ['walgate.users', /this environment's schema/],
      ['token_claims', /schema\.function/],
      ['claims_master.x; DROP TABLE walgate.users', /schema\.function/],
      [42, /string/],
    ];
    for (const [claimsFunction, message] of cases) {
      const r = await http.patch('/api/rest/_environment', { claimsFunction }, manage);
      expect(r.status, JSON.stringify(r.body)).to.equal(400);
      expect(r.body.error).to.equal('VALIDATION_ERROR');
      expect(r.body.violations[0].path).to.equal('claimsFunction');
      expect(r.body.violations[0].message).to.match(message);
    }
    expect((await http.get('/api/rest/_environment', manage)).body.claimsFunction).to.equal(null);
  });

  it('a function adding a plan and a computed permission list: in the tokens of login, refresh and GraphQL; null removes it', async () => {
    const set = await setFunction('claims_master.token_claims');
    expect(set.status, JSON.stringify(set.body)).to.equal(200);
    expect(set.body.claimsFunction).to.equal('claims_master.token_claims');

    const logged = await login(a);
    expect(logged.status, JSON.stringify(logged.body)).to.equal(200);
    const claims = claimsOf(logged.body.accessToken);
    expect(claims).to.include({ plan: 'pro', seen_email: a.email, seen_sid: claims.sid, sub: a.userId, env: 'master' });
    expect(claims.permissions).to.deep.equal(['invoices:read', 'invoices:write']);
    // The token is walgate's as ever: a protected call accepts it.
    expect((await http.get('/auth/me', bearer(logged.body.accessToken))).status).to.equal(200);

    // The app's data changes; the next token (a refresh) says so.
    await q(`UPDATE claims_master.accounts SET plan = 'enterprise' WHERE user_id = $1`, [a.userId]);
    await q(`INSERT INTO claims_master.grants VALUES ($1, 'documents:read_all')`, [a.userId]);
    const refreshed = await http.post('/auth/refresh-token', { refreshToken: logged.body.refreshToken });
    expect(refreshed.status, JSON.stringify(refreshed.body)).to.equal(200);
    expect(claimsOf(refreshed.body.accessToken)).to.deep.include({
      plan: 'enterprise',
      permissions: ['documents:read_all', 'invoices:read', 'invoices:write'],
    });

    const viaGraphql = await gql(http, 'mutation($i: LoginInput!) { login(input: $i) { accessToken } }', {
      i: { email: a.email, password: PASSWORD },
    });
    expect(claimsOf(viaGraphql.body.data.login.accessToken).plan).to.equal('enterprise');

    expect((await setFunction(null)).body.claimsFunction).to.equal(null);
    const plain = claimsOf((await login(a)).body.accessToken);
    expect(plain).to.not.have.any.keys('plan', 'permissions');
  });

  it('what the user controls reaches the function as data, byte for byte: quotes, backslashes, dollars, a statement', async () => {
    // The call is one simple query with its values inlined as escaped literals (call.ts).
    const note = `O'Brien \\ \\' "x" $$ $q$ '; DROP TABLE claims_master.accounts; -- \u00e9 \n end`;
    const b = await signUpAndConfirm(t, http);
    expect((await http.patch('/auth/me', { userMetadata: { note } }, bearer(b.accessToken))).status).to.equal(200);
    await q(`CREATE OR REPLACE FUNCTION claims_master.echo(u jsonb, claims jsonb) RETURNS jsonb LANGUAGE sql STABLE AS $$
               SELECT jsonb_build_object('note', u->'userMetadata'->>'note', 'seen_sub', claims->>'sub') $$`);
    expect((await setFunction('claims_master.echo')).status).to.equal(200);
    const logged = await login(b);
    expect(logged.status, JSON.stringify(logged.body)).to.equal(200);
    expect(claimsOf(logged.body.accessToken)).to.include({ note, seen_sub: b.userId });
    expect((await q('SELECT count(*) FROM claims_master.accounts')).rows[0].count).to.equal('1');
  });

  it('the second factor’s completion mints through the function too', async () => {
    const b = await signUpAndConfirm(t, http);
    const factor = await enrolTotp(t, http, b);
    expect((await setFunction('claims_master.token_claims')).status).to.equal(200);
    t.clock.advanceSeconds(30);
    const first = await login(b);
    expect(first.body.mfaRequired).to.equal(true);
    const pair = await http.post('/auth/mfa/challenge', {
      mfaToken: first.body.mfaToken,
      factorId: factor.factorId,
      code: totp(factor.secret, t.clock.now()),
    });
    expect(pair.status, JSON.stringify(pair.body)).to.equal(200);
    expect(claimsOf(pair.body.accessToken)).to.deep.include({ plan: 'free', permissions: [], aal: 'aal2' });
  });

  const failures: Array<[string, string, Record<string, unknown>]> = [
    ['sleeps 1 s', 'claims_master.sleepy', { reason: 'timeout' }],
    ['returns sub', 'claims_master.sets_sub', { reason: 'reserved_claim', claims: ['sub'] }],
    ['returns an org_ claim', 'claims_master.sets_org', { reason: 'reserved_claim', claims: ['org_role'] }],
    ['returns 2 KB', 'claims_master.huge', { reason: 'too_large' }],
    ['returns an array', 'claims_master.array_result', { reason: 'not_an_object' }],
    ['raises', 'claims_master.raises', { reason: 'error', sqlstate: 'P0001' }],
    ['writes', 'claims_master.writes', { reason: 'error', sqlstate: '25006' }],
  ];
  for (const [label, fn, expected] of failures) {
    it(`a function that ${label}: no token, 502 AUTH_CLAIMS_FUNCTION_FAILED naming it, and no session left behind`, async () => {
      expect((await setFunction(fn)).status).to.equal(200);
      const before = await liveSessions(a.userId);
      const started = Date.now();
      const r = await login(a);
      expect(r.status, JSON.stringify(r.body)).to.equal(502);
      expect(r.body).to.deep.include({ error: 'AUTH_CLAIMS_FUNCTION_FAILED', function: fn, ...expected });
      expect(r.body.message).to.include(fn).and.to.include('no token was issued');
      expect(r.body).to.not.have.any.keys('accessToken', 'refreshToken');
      expect(JSON.stringify(r.body)).to.not.include('secret internal detail');
      if (expected.reason === 'timeout') expect(Date.now() - started, 'cut at the budget, not after the 1 s sleep').to.be.below(1000);
      expect(await liveSessions(a.userId)).to.equal(before);
      expect((await q(`SELECT plan FROM claims_master.accounts WHERE user_id = $1`, [a.userId])).rows[0].plan).to.not.equal('stolen');
    });
  }

  it('a function that loosens its session (time-out, read-only, search_path): its answer stands, and no later call runs without the bounds', async () => {
    expect((await setFunction('claims_master.loosens')).status).to.equal(200);
    // More calls than the claims connections (10): any connection it reached has been loosened.
    for (let i = 0; i < 12; i++) {
      const r = await login(a);
      expect(r.status, JSON.stringify(r.body)).to.equal(200);
      expect(claimsOf(r.body.accessToken).loose).to.equal(true);
    }
    for (const [fn, expected] of [
      ['claims_master.sleepy', { reason: 'timeout' }],
      ['claims_master.writes', { reason: 'error', sqlstate: '25006' }],
    ] as const) {
      expect((await setFunction(fn)).status).to.equal(200);
      for (let i = 0; i < 12; i++) {
        const r = await login(a);
        expect(r.status, `${fn}, call ${i + 1}: ${JSON.stringify(r.body)}`).to.equal(502);
        expect(r.body).to.deep.include({ function: fn, ...expected });
      }
    }
    expect((await q(`SELECT plan FROM claims_master.accounts WHERE user_id = $1`, [a.userId])).rows[0].plan).to.not.equal('stolen');
  });

  it('a refresh refused by the function keeps the refresh token usable: once the function is fixed, it works (after the reuse grace too)', async () => {
    const logged = await login(a);
    expect((await setFunction('claims_master.sets_sub')).status).to.equal(200);
    const refused = await http.post('/auth/refresh-token', { refreshToken: logged.body.refreshToken });
    expect(refused.status).to.equal(502);
    expect(refused.body.error).to.equal('AUTH_CLAIMS_FUNCTION_FAILED');
    expect((await setFunction('claims_master.token_claims')).status).to.equal(200);
    t.clock.advanceSeconds(60); // past the 10 s grace: a reuse would revoke the session
    const retried = await http.post('/auth/refresh-token', { refreshToken: logged.body.refreshToken });
    expect(retried.status, JSON.stringify(retried.body)).to.equal(200);
    expect(claimsOf(retried.body.accessToken).plan).to.be.a('string');
  });

  it('refreshes at once share statements, yet each token carries its own user’s claims, and one user’s failure is only theirs', async () => {
    const accounts = await Promise.all(Array.from({ length: 24 }, () => signUpAndConfirm(t, http)));
    const unlucky = accounts[7]!;
    await q(`CREATE FUNCTION claims_master.grouped(u jsonb, claims jsonb) RETURNS jsonb LANGUAGE plpgsql STABLE AS $$
               BEGIN
                 IF u->>'id' = '${unlucky.userId}' THEN RAISE EXCEPTION 'not this one'; END IF;
                 RETURN jsonb_build_object('seen_email', u->>'email', 'seen_sid', claims->>'sid',
                                           'statement', pg_backend_pid() || '@' || statement_timestamp());
               END $$`);
    expect((await setFunction('claims_master.grouped')).status).to.equal(200);
    const statements = new Set<string>();
    // Three waves of 24 at once: the first call of each goes alone, those arriving meanwhile together.
    let tokens = accounts.map((x) => x.refreshToken);
    for (let wave = 0; wave < 3; wave++) {
      const answers = await Promise.all(tokens.map((refreshToken) => http.post('/auth/refresh-token', { refreshToken })));
      answers.forEach((r, i) => {
        if (accounts[i] === unlucky) {
          expect(r.status, JSON.stringify(r.body)).to.equal(502);
          expect(r.body).to.deep.include({ error: 'AUTH_CLAIMS_FUNCTION_FAILED', reason: 'error', sqlstate: 'P0001' });
          return;
        }
        expect(r.status, JSON.stringify(r.body)).to.equal(200);
        const claims = claimsOf(r.body.accessToken);
        expect(claims).to.include({ sub: accounts[i]!.userId, seen_email: accounts[i]!.email, seen_sid: claims.sid });
        statements.add(claims.statement as string);
      });
      tokens = answers.map((r, i) => (r.status === 200 ? r.body.refreshToken : tokens[i]));
    }
    expect(statements.size, 'statements for 69 tokens').to.be.below(69);
  });

  it('a function dropped after it was set: no token, reason missing', async () => {
    await q(`CREATE FUNCTION claims_master.doomed(u jsonb, claims jsonb) RETURNS jsonb LANGUAGE sql AS $$ SELECT '{}'::jsonb $$`);
    expect((await setFunction('claims_master.doomed')).status).to.equal(200);
    await q('DROP FUNCTION claims_master.doomed(jsonb, jsonb)');
    const r = await login(a);
    expect(r.status).to.equal(502);
    expect(r.body).to.deep.include({ error: 'AUTH_CLAIMS_FUNCTION_FAILED', function: 'claims_master.doomed', reason: 'missing' });
  });

  it('walgate project set checks the function the same way, and takes null to remove it', async () => {
    const bad = await walgate(t, ['project', 'set', 'claims', '--set', 'claimsFunction=claims_master.nope']);
    expect(bad.code).to.not.equal(0);
    expect(bad.stderr).to.match(/claimsFunction: no function claims_master\.nope/);
    const good = await walgate(t, ['project', 'set', 'claims', '--set', 'claimsFunction=claims_master.token_claims']);
    expect(good.code, good.stderr).to.equal(0);
    expect((await http.get('/api/rest/_environment', manage)).body.claimsFunction).to.equal('claims_master.token_claims');
    const cleared = await walgate(t, ['project', 'set', 'claims', '--set', 'claimsFunction=null']);
    expect(cleared.code, cleared.stderr).to.equal(0);
    expect((await http.get('/api/rest/_environment', manage)).body.claimsFunction).to.equal(null);
  });
});
