import { randomBytes } from 'node:crypto';
import { expect } from 'chai';
import { decodeProtectedHeader } from 'jose';
import { bearer, PASSWORD, signUpAndConfirm, startAuthApi } from '../auth/support.js';
import { redisUrlOrSkip, type TestApi } from '../support/api.js';
import { walgate } from '../support/cli.js';

// Operator changes made with the CLI reach every running api at once (Postgres NOTIFY), although
// each api keeps settings, keys and profiles in memory far longer (a one-minute cache here).

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const LONG_CACHE = { cacheTtlMs: 60_000 };

describe('operator changes reach every api at once', function () {
  this.timeout(120_000);
  let a: TestApi;
  let b: TestApi;
  before(async function () {
    redisUrlOrSkip(this);
    // Two api processes over one database, Redis-backed (one revocation list, as in production).
    const shared = {
      redis: true,
      env: { KEY_ENCRYPTION_KEY: randomBytes(32).toString('base64') },
      overrides: { ...LONG_CACHE, redisPrefix: `walgate-test:${randomBytes(4).toString('hex')}:` },
    };
    a = await startAuthApi(shared);
    b = await startAuthApi({ ...shared, database: a.database });
  });
  after(async () => {
    await b?.close();
    await a?.close();
  });

  const scoped = (t: TestApi, projectId: string) => t.http.with({ 'x-project-id': projectId });

  it('keys rotate: a login 0.5 s later is signed with the new key on both', async () => {
    const { http } = await a.provision({ projectId: 'rotating', name: 'master' });
    const account = await signUpAndConfirm(a, http);
    const kidOfLogin = async (t: TestApi) => {
      const res = await scoped(t, 'rotating').post('/auth/login', { email: account.email, password: PASSWORD });
      expect(res.status, JSON.stringify(res.body)).to.equal(200);
      return decodeProtectedHeader(res.body.accessToken).kid;
    };
    const before = [await kidOfLogin(a), await kidOfLogin(b)]; // both have the keys in memory now
    const r = await walgate(a, ['keys', 'rotate', '--project', 'rotating']);
    expect(r.code, r.stderr).to.equal(0);
    const { rows } = await a.ctx.pool.query(`SELECT kid FROM walgate.signing_keys WHERE project_id = 'rotating' AND state = 'active'`);
    const active = rows[0].kid as string;
    expect(before).to.not.include(active);
    await sleep(500);
    expect([await kidOfLogin(a), await kidOfLogin(b)]).to.deep.equal([active, active]);
  });

  it('project set: an environment switched off and back on answers at once on both', async () => {
    await a.provision({ projectId: 'switching', name: 'master' });
    const jwks = (t: TestApi) => scoped(t, 'switching').get('/auth/.well-known/jwks.json');
    expect([(await jwks(a)).status, (await jwks(b)).status]).to.deep.equal([200, 200]);
    expect((await walgate(a, ['project', 'set', 'switching', '--auth', 'off'])).code).to.equal(0);
    await sleep(500);
    const off = [await jwks(a), await jwks(b)];
    expect(off.map((res) => res.body.error)).to.deep.equal(['AUTH_NOT_CONFIGURED', 'AUTH_NOT_CONFIGURED']);
    expect((await walgate(a, ['project', 'set', 'switching', '--auth', 'on'])).code).to.equal(0);
    expect([(await jwks(a)).status, (await jwks(b)).status]).to.deep.equal([200, 200]);
  });

  it('project create: a project asked for before it existed answers at once on both', async () => {
    const jwks = (t: TestApi) => scoped(t, 'latecomer').get('/auth/.well-known/jwks.json');
    expect([(await jwks(a)).status, (await jwks(b)).status]).to.not.include(200);
    expect((await walgate(a, ['project', 'create', 'latecomer'])).code).to.equal(0);
    expect([(await jwks(a)).status, (await jwks(b)).status]).to.deep.equal([200, 200]);
  });

  it('users logout from a shell without REDIS_URL: the Redis-backed apis refuse the token at once', async () => {
    const { http } = await a.provision({ projectId: 'forced', name: 'master' });
    const account = await signUpAndConfirm(a, http);
    const me = (t: TestApi) => scoped(t, 'forced').get('/auth/me', bearer(account.accessToken));
    expect([(await me(a)).status, (await me(b)).status]).to.deep.equal([200, 200]); // profiles cached on both
    const r = await walgate(a, ['users', 'logout', '--project', 'forced', '--email', account.email], { REDIS_URL: '' });
    expect(r.stdout, r.stderr).to.contain('ended 1 session');
    const after = [await me(a), await me(b)];
    expect(after.map((res) => [res.status, res.body.error])).to.deep.equal([
      [401, 'AUTH_TOKEN_INVALID'],
      [401, 'AUTH_TOKEN_INVALID'],
    ]);
    // Written where the daemons look: their Redis revocation list.
    const sid = JSON.parse(Buffer.from(account.accessToken.split('.')[1]!, 'base64url').toString()).sid as string;
    expect(await a.ctx.revocations.isRevoked(sid)).to.equal(true);
  });
});
