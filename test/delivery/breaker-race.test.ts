import { expect } from 'chai';
import { systemClock } from '../../src/core/clock.js';
import { createPool, type Pool } from '../../src/core/db/pool.js';
import { EndpointBreakers } from '../../src/delivery/breaker.js';
import { createLogger } from '../../src/core/log.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';

// A worker reads the shared breaker state after every claim while its attempts record outcomes.
// A read that began before a failure opened the breaker, and ends after it, must not bring the
// closed state back: the next request would go through a breaker that just opened.
describe('delivery: a stale breaker read cannot reopen the gate', () => {
  let db: TestDatabase;
  let pool: Pool;
  before(async () => {
    db = await createTestDatabase();
    pool = createPool(db.url, { max: 4 });
    await pool.query(`INSERT INTO walgate.projects (id) VALUES ('shop')`);
    await pool.query(`INSERT INTO walgate.environments (project_id, name, schema_name) VALUES ('shop', 'master', 'shop_master')`);
  });
  after(async () => {
    await pool?.end();
    await db?.drop();
  });

  it('a refresh that read before the opening failure leaves the breaker open', async () => {
    const endpoint = { projectId: 'shop', environment: 'master', url: 'https://hooks.example.com/hook' };
    let releaseRead!: () => void;
    const readHeld = new Promise<void>((r) => (releaseRead = r));
    // The refresh's SELECT gets its rows now (closed: no row yet) but hands them back only later.
    const slowReads = {
      query: async (text: string, values?: unknown[]) => {
        const result = await pool.query(text, values);
        if (text.trimStart().startsWith('SELECT b.project_id')) await readHeld;
        return result;
      },
    } as unknown as Pool;
    const breakers = new EndpointBreakers(
      slowReads,
      { failures: 1, cooldownMs: 60_000, probeLeaseMs: 10_000 },
      systemClock,
      createLogger('silent'),
    );
    const refreshing = breakers.refresh([endpoint]);
    await new Promise((r) => setTimeout(r, 50)); // the read has happened
    expect(await breakers.recordFailure(endpoint, false)).to.be.an.instanceOf(Date); // this failure opens it
    releaseRead();
    await refreshing;
    const admission = await breakers.admit(endpoint);
    expect(admission.kind).to.equal('wait');
  });

  it("one process's success breaks another's run of failures: a standby's failures do not add up across the leader's successes", async () => {
    const endpoint = { projectId: 'shop', environment: 'master', url: 'https://hooks.example.com/standby' };
    const settings = { failures: 5, cooldownMs: 60_000, probeLeaseMs: 10_000 };
    const standby = new EndpointBreakers(pool, settings, systemClock, createLogger('silent'));
    const leader = new EndpointBreakers(pool, settings, systemClock, createLogger('silent'));
    for (let i = 0; i < 4; i++) expect(await standby.recordFailure(endpoint, false)).to.equal(null);
    // The leader, which saw no failure, delivers to the endpoint.
    await leader.recordSuccess(endpoint, false);
    const shared = async () =>
      (await pool.query('SELECT consecutive_failures, opened_until FROM walgate.endpoint_breakers WHERE url = $1', [endpoint.url])).rows[0];
    expect(await shared()).to.deep.equal({ consecutive_failures: 0, opened_until: null });
    // One more failure of the standby is its first consecutive one, not its fifth.
    expect(await standby.recordFailure(endpoint, false)).to.equal(null);
    expect(await shared()).to.deep.equal({ consecutive_failures: 1, opened_until: null });
    expect((await standby.admit(endpoint)).kind).to.equal('send');
    expect((await leader.admit(endpoint)).kind).to.equal('send');
  });
});
