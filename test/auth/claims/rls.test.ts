import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect } from 'chai';
import type { TestApi } from '../../support/api.js';
import type { HttpClient } from '../../support/http.js';
import { claimsOf } from '../mfa/support.js';
import { bearer, signUpAndConfirm, startAuthApi } from '../support.js';

// docs/claims.md's row-level-security example, run as written: its SQL blocks (the function, the
// tables and policy, the per-request transaction) against an environment `acme/master`, with the
// claims of real access tokens. If the page's SQL stops working, or the claims stop reaching the
// token, this fails.

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../../..');
const sqlBlocks = [...readFileSync(path.join(ROOT, 'docs/claims.md'), 'utf8').matchAll(/```sql\n([\s\S]*?)```/g)].map((m) => m[1]!);

describe('auth claims: the row-level-security example of docs/claims.md', function () {
  this.timeout(60_000);
  let t: TestApi;
  let http: HttpClient;

  before(async () => {
    t = await startAuthApi();
    ({ http } = await t.provision({ projectId: 'acme', name: 'master' }));
  });
  after(() => t.close());

  it('the page has the three blocks: the function, the tables with the policy, the request', () => {
    expect(sqlBlocks).to.have.length(3);
    expect(sqlBlocks[0]).to.include('CREATE FUNCTION acme_master.token_claims');
    expect(sqlBlocks[1]).to.include('CREATE POLICY');
    expect(sqlBlocks[2]).to.include("set_config('request.jwt.claims', $1, true)");
  });

  it("rows filtered by the token's claims: own documents, or every one with documents:read_all", async () => {
    const [fn, schema, request] = sqlBlocks as [string, string, string];
    await t.ctx.pool.query(schema); // the tables first: a SQL function's body is checked when it is created
    await t.ctx.pool.query(fn);
    const manage = bearer(await t.managementToken('acme'));
    const set = await http.patch('/api/rest/_environment', { claimsFunction: 'acme_master.token_claims' }, manage);
    expect(set.status, JSON.stringify(set.body)).to.equal(200);

    const ada = await signUpAndConfirm(t, http);
    const bob = await signUpAndConfirm(t, http);
    await t.ctx.pool.query(`INSERT INTO acme_master.documents (owner, title) VALUES ($1, 'ada-1'), ($2, 'bob-1'), ($1, 'ada-2')`, [
      ada.userId,
      bob.userId,
    ]);
    await t.ctx.pool.query(`INSERT INTO acme_master.grants VALUES ($1, 'documents:read_all')`, [bob.userId]);

    const tokenOf = async (email: string, password: string) => {
      const r = await http.post('/auth/login', { email, password });
      expect(r.status, JSON.stringify(r.body)).to.equal(200);
      return claimsOf(r.body.accessToken);
    };
    /** The page's request transaction, statement by statement, `$1` bound to the claims. */
    const titlesFor = async (claims: Record<string, unknown> | null) => {
      const client = await t.ctx.pool.connect();
      try {
        let titles: string[] = [];
        for (const statement of request
          .split(';')
          .map((s) => s.trim())
          .filter(Boolean)) {
          const values = statement.includes('$1') ? [claims && JSON.stringify(claims)] : [];
          const { rows } = await client.query(statement, values);
          if (statement.startsWith('SELECT title')) titles = rows.map((r: { title: string }) => r.title);
        }
        return titles;
      } finally {
        await client.query('ROLLBACK').catch(() => undefined);
        client.release();
      }
    };

    const adaClaims = await tokenOf(ada.email, ada.password);
    const bobClaims = await tokenOf(bob.email, bob.password);
    expect(adaClaims.permissions).to.deep.equal([]);
    expect(bobClaims.permissions).to.deep.equal(['documents:read_all']);
    expect(await titlesFor(adaClaims)).to.deep.equal(['ada-1', 'ada-2']);
    expect(await titlesFor(bobClaims)).to.deep.equal(['ada-1', 'bob-1', 'ada-2']);
    // No claims at all (a request without a token): nothing.
    expect(await titlesFor(null)).to.deep.equal([]);
  });
});
