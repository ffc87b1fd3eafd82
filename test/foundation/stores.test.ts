import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import { createRedis } from '../../src/core/context.js';
import { createPool, type Pool } from '../../src/core/db/pool.js';
import { SharedRateLimiter, type RateLimiter } from '../../src/core/store/rate-limits.js';
import { PostgresRevocationStore, RedisRevocationStore, type RevocationStore } from '../../src/core/store/revocations.js';
import { TestClock } from '../support/clock.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { redisUrlOrSkip } from '../support/api.js';
import type { Redis } from 'ioredis';

// The same behaviour is required of both implementations of each store.
const kinds = ['postgres', 'redis'] as const;

for (const kind of kinds) {
  describe(`stores on ${kind}`, function () {
    let db: TestDatabase;
    let pool: Pool;
    let redis: Redis | undefined;
    const clock = new TestClock();
    const prefix = `walgate-test:${randomUUID()}:`;

    before(async function () {
      if (kind === 'redis') redis = createRedis(redisUrlOrSkip(this));
      db = await createTestDatabase();
      pool = createPool(db.url, { max: 4 });
    });
    after(async () => {
      redis?.disconnect();
      await pool?.end();
      await db?.drop();
    });

    const revocations = (): RevocationStore =>
      redis ? new RedisRevocationStore(redis, clock.now, `${prefix}revoked:`) : new PostgresRevocationStore(pool, clock.now);
    const limiter = (): RateLimiter => new SharedRateLimiter(redis ? { kind: 'redis', redis } : { kind: 'postgres', pool }, prefix);

    it('revocation list: a revoked session is revoked, another is not', async () => {
      const store = revocations();
      const sid = randomUUID();
      expect(await store.isRevoked(sid)).to.equal(false);
      await store.revoke(sid, new Date(clock.now().getTime() + 60_000));
      expect(await store.isRevoked(sid)).to.equal(true);
      expect(await store.isRevoked(randomUUID())).to.equal(false);
    });

    it('revocation list: revoking twice keeps the later expiry', async () => {
      const store = revocations();
      const sid = randomUUID();
      await store.revoke(sid, new Date(clock.now().getTime() + 60_000));
      await store.revoke(sid, new Date(clock.now().getTime() + 5_000));
      expect(await store.isRevoked(sid)).to.equal(true);
    });

    it('revocation list: is seen by a second instance over the same store', async () => {
      const a = revocations();
      const b = revocations();
      const sid = randomUUID();
      await a.revoke(sid, new Date(clock.now().getTime() + 60_000));
      expect(await b.isRevoked(sid)).to.equal(true);
    });

    it('revocation list: 300 questions at once, every answer right (a malformed id is simply not revoked)', async () => {
      const store = revocations();
      const revoked = Array.from({ length: 100 }, () => randomUUID());
      for (const sid of revoked) await store.revoke(sid, new Date(clock.now().getTime() + 60_000));
      const others = Array.from({ length: 199 }, () => randomUUID());
      const asked = [...revoked, ...others, 'not-a-session-id'];
      const answers = await Promise.all(asked.map((sid) => store.isRevoked(sid)));
      expect(answers).to.deep.equal(asked.map((sid) => (revoked as string[]).includes(sid)));
    });

    if (kind === 'postgres')
      it('revocation list: the questions of one turn of the event loop go to Postgres as one statement', async () => {
        const store = new PostgresRevocationStore(pool, clock.now);
        const statements: string[] = [];
        const counting = {
          query: (q: { text: string }, ...rest: unknown[]) => {
            statements.push(q.text);
            return (pool.query as (...a: unknown[]) => unknown)(q, ...rest);
          },
        } as unknown as Pool;
        const batched = new PostgresRevocationStore(counting, clock.now);
        const sid = randomUUID();
        await store.revoke(sid, new Date(clock.now().getTime() + 60_000));
        const answers = await Promise.all([sid, randomUUID(), sid, randomUUID()].map((id) => batched.isRevoked(id)));
        expect(answers).to.deep.equal([true, false, true, false]);
        expect(statements).to.have.length(1);
      });

    it('rate limits: allow the limit, then refuse with a retry-after, per key', async () => {
      const rl = limiter();
      const policy = { name: `t-${randomUUID()}`, points: 3, durationSeconds: 60 };
      for (let i = 0; i < 3; i++) expect(await rl.consume(policy, 'k1')).to.deep.equal({ allowed: true });
      const refused = await rl.consume(policy, 'k1');
      expect(refused.allowed).to.equal(false);
      expect(refused.allowed === false && refused.retryAfterSeconds).to.be.within(1, 60);
      expect(await rl.consume(policy, 'k2')).to.deep.equal({ allowed: true });
    });

    it('rate limits: are atomic across instances under concurrency', async () => {
      const policy = { name: `t-${randomUUID()}`, points: 10, durationSeconds: 60 };
      const a = limiter();
      const b = limiter();
      const results = await Promise.all(Array.from({ length: 30 }, (_, i) => (i % 2 ? a : b).consume(policy, 'shared')));
      expect(results.filter((r) => r.allowed)).to.have.length(10);
    });
  });
}
