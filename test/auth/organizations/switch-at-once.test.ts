import { expect } from 'chai';
import { decodeJwt } from 'jose';
import type { TestApi } from '../../support/api.js';
import type { HttpClient } from '../../support/http.js';
import { bearer, signUpAndConfirm, startAuthApi, uniqueEmail, type Account } from '../support.js';
import { createOrganization } from './support.js';

// Many members of one organization switching to it at the same moment (a B2B app's morning) each
// get their pair. The switch once locked the organization's row for update and signed the token
// inside that transaction: members queued behind one another, each holding a connection, and when
// the signing keys had to be read again (a cache miss) the holder waited for a connection the
// queue held — 503 SERVICE_UNAVAILABLE after the pool's time-out (seen in `npm run bench`).

const MEMBERS = 40; // four times the api's pool of 10 connections

describe('organizations: many members switch to one organization at once', function () {
  this.timeout(120_000);
  let t: TestApi;
  let http: HttpClient;

  before(async () => {
    // Keys read again on (almost) every signing: the cache miss that a busy api meets now and then.
    t = await startAuthApi({ overrides: { cacheTtlMs: 1 } });
    ({ http } = await t.provision({ projectId: 'b2b', name: 'master' }));
  });
  after(() => t.close());

  it('every switch answers 200 with a token that carries the organization', async () => {
    const owner = await signUpAndConfirm(t, http, uniqueEmail('owner'));
    const org = await createOrganization(http, owner.accessToken, 'Morning');
    const members: Account[] = [];
    for (let i = 0; i < MEMBERS; i++) members.push(await signUpAndConfirm(t, http, uniqueEmail('member')));
    await t.ctx.pool.query(
      `INSERT INTO walgate.organization_members (id, organization_id, user_id, role, created_at, updated_at)
       SELECT gen_random_uuid(), $1, u, 'member', now(), now() FROM unnest($2::uuid[]) u`,
      [org, members.map((m) => m.userId)],
    );
    const answers = await Promise.all(
      members.map((m) => http.post('/auth/organizations/active', { organizationId: org }, bearer(m.accessToken))),
    );
    expect(answers.map((a) => a.status)).to.deep.equal(members.map(() => 200));
    for (const a of answers) expect(decodeJwt(a.body.accessToken).org_id).to.equal(org);
  });
});
