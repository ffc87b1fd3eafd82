import { randomBytes } from 'node:crypto';
import { expect } from 'chai';
import { redisUrlOrSkip, type TestApi } from '../support/api.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { HttpClient } from '../support/http.js';
import { bearer, GENEROUS_LIMITS, signUpAndConfirm, startAuthApi } from './support.js';

// Two api processes over one database (and one Redis), with the production caches on (verified
// tokens, settings, profiles): a logout on one is seen by the other at once, because every
// protected request asks the shared revocation list, and no cache outlives a token's expiry.
for (const store of ['postgres', 'redis'] as const) {
  describe(`auth: logout holds across two api instances (${store} revocation list)`, function () {
    let db: TestDatabase;
    let a: TestApi;
    let b: TestApi;

    before(async function () {
      if (store === 'redis') redisUrlOrSkip(this);
      db = await createTestDatabase();
      const shared = {
        database: db,
        redis: store === 'redis',
        env: { KEY_ENCRYPTION_KEY: randomBytes(32).toString('base64') },
        overrides: { cacheTtlMs: 60_000, rateLimits: GENEROUS_LIMITS, redisPrefix: `walgate-test:${randomBytes(4).toString('hex')}:` },
      };
      a = await startAuthApi(shared);
      b = await startAuthApi(shared);
    });
    after(async () => {
      await a?.close();
      await b?.close();
      await db?.drop();
    });

    it('a token logged out on instance A is refused by instance B', async () => {
      const { http: httpA } = await a.provision({ projectId: 'shop', name: 'master' });
      const httpB = new HttpClient(b.url, { 'x-project-id': 'shop' });
      const account = await signUpAndConfirm(a, httpA);
      expect((await httpB.get('/auth/me', bearer(account.accessToken))).status).to.equal(200);
      expect((await httpA.post('/auth/logout', undefined, bearer(account.accessToken))).status).to.equal(200);
      const res = await httpB.get('/auth/me', bearer(account.accessToken));
      expect(res.status).to.equal(401);
      expect(res.body.error).to.equal('AUTH_TOKEN_INVALID');
      if (store === 'redis') {
        const keys = await a.ctx.redis!.keys('walgate-test:*revoked:*');
        expect(keys.length).to.be.at.least(1);
      } else {
        const { rowCount } = await a.ctx.pool.query('SELECT 1 FROM walgate.revoked_sessions');
        expect(rowCount).to.be.at.least(1);
      }
    });

    it('refuses an expired token whose signature was checked (and remembered) while it was valid', async () => {
      const http = new HttpClient(a.url, { 'x-project-id': 'shop' });
      const account = await signUpAndConfirm(a, http);
      expect((await http.get('/auth/me', bearer(account.accessToken))).status).to.equal(200);
      a.clock.advanceSeconds(900 + 31); // past the 15 minutes and the 30 s clock tolerance
      const res = await http.get('/auth/me', bearer(account.accessToken));
      expect(res.status).to.equal(401);
      expect(res.body.error).to.equal('AUTH_TOKEN_EXPIRED');
    });
  });
}

describe('auth: with Redis unreachable, protected requests fail closed', function () {
  this.timeout(30_000);
  let t: TestApi;
  before(async () => {
    const { freePort } = await import('../../src/core/db/embedded.js');
    t = await startAuthApi({ redisUrl: `redis://127.0.0.1:${await freePort()}` });
  });
  after(() => t?.close());

  it('answers 503 SERVICE_UNAVAILABLE (not 200, not a hang), while login still works on the local limiter', async () => {
    const { http } = await t.provision({ projectId: 'shop', name: 'master' });
    const account = await signUpAndConfirm(t, http);
    const started = Date.now();
    const me = await http.get('/auth/me', bearer(account.accessToken));
    expect(me.status).to.equal(503);
    expect(me.body.error).to.equal('SERVICE_UNAVAILABLE');
    expect(Date.now() - started).to.be.below(5000);
    expect((await http.post('/auth/login', { email: account.email, password: account.password })).status).to.equal(200);
  });
});
