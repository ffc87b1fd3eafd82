import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { expect } from 'chai';
import { freePort } from '../../src/core/db/embedded.js';
import type { TestApi } from '../support/api.js';
import { bearer, signUpAndConfirm, startAuthApi } from '../auth/support.js';

// Redis (the revocation list and rate limits) goes away and comes back, on a server of this
// test's own. While it is away a protected request cannot know whether its token was revoked,
// so it fails closed (503, at once); login goes on with a per-process limiter; when Redis is
// back, everything recovers without a restart.
const REDIS_SERVER = '/usr/bin/redis-server';

describe('reliability: Redis stopped and started', function () {
  this.timeout(60_000);
  let port: number;
  let redis: ChildProcess | undefined;
  let t: TestApi;

  async function startRedis(): Promise<void> {
    redis = spawn(REDIS_SERVER, ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: 'ignore' });
    const until = Date.now() + 10_000;
    while (Date.now() < until) {
      if (t?.ctx.redis?.status === 'ready') return;
      const ok = await fetch(`http://127.0.0.1:${port}`).then(
        () => true,
        (err: Error & { cause?: { code?: string } }) => err.cause?.code !== 'ECONNREFUSED',
      );
      if (ok && !t) return;
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  async function stopRedis(): Promise<void> {
    const exited = new Promise((r) => redis!.once('exit', r));
    redis!.kill('SIGKILL');
    await exited;
  }

  before(async function () {
    if (!existsSync(REDIS_SERVER)) this.skip();
    port = await freePort();
    await startRedis();
    t = await startAuthApi({ redisUrl: `redis://127.0.0.1:${port}` });
  });
  after(async () => {
    await t?.close();
    redis?.kill('SIGKILL');
  });

  it('fails closed with 503 while Redis is away, logs in meanwhile, and recovers by itself', async () => {
    const { http } = await t.provision({ projectId: 'shop', name: 'master' });
    const a = await signUpAndConfirm(t, http);
    expect((await http.get('/auth/me', bearer(a.accessToken))).status).to.equal(200);
    const gone = await signUpAndConfirm(t, http);
    expect((await http.post('/auth/logout', undefined, bearer(gone.accessToken))).status).to.equal(200);

    await stopRedis(); // without persistence: it comes back empty
    for (let i = 0; i < 3; i++) {
      const started = Date.now();
      const me = await http.get('/auth/me', bearer(a.accessToken));
      expect(me.status).to.equal(503);
      expect(me.body.error).to.equal('SERVICE_UNAVAILABLE');
      expect(Date.now() - started, 'answered at once, not after a hang').to.be.below(3000);
    }
    const login = await http.post('/auth/login', { email: a.email, password: a.password });
    expect(login.status, 'login limited per process meanwhile').to.equal(200);

    await startRedis();
    const until = Date.now() + 20_000;
    let status = 0;
    while (Date.now() < until) {
      status = (await http.get('/auth/me', bearer(login.body.accessToken))).status;
      if (status === 200) break;
      await new Promise((r) => setTimeout(r, 200));
    }
    expect(status, 'recovered without a restart').to.equal(200);
    const revoked = await http.get('/auth/me', bearer(gone.accessToken));
    expect(revoked.status, 'a logout survives the revocation list forgetting it').to.equal(401);
    expect(revoked.body.error).to.equal('AUTH_TOKEN_INVALID');
  });
});
