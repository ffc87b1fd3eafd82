import { expect } from 'chai';
import { decodeJwt } from 'jose';
import { redisUrlOrSkip, type TestApi } from '../../support/api.js';
import { HttpClient } from '../../support/http.js';
import { bearer, signUpAndConfirm, startAuthApi, uniqueEmail } from '../support.js';

// With Redis as the revocation list (REDIS_URL), a removed member's organization tokens are
// refused from the next request just the same, and their refresh comes back without it.

describe('organizations: removal through the Redis revocation list', function () {
  this.timeout(60_000);
  let t: TestApi | undefined;

  before(async function () {
    redisUrlOrSkip(this);
    t = await startAuthApi({ redis: true });
  });
  after(() => t?.close());

  it('the member’s tokens carrying the organization are refused at once; the others work', async () => {
    const { http } = await t!.provision({ projectId: 'redisorg', name: 'master' });
    const admin = new HttpClient(t!.url, {
      authorization: `Bearer ${await t!.managementToken('redisorg')}`,
      'x-project-id': 'redisorg',
      environment: 'master',
    });
    const ada = await signUpAndConfirm(t!, http, uniqueEmail('ada'));
    const bob = await signUpAndConfirm(t!, http, uniqueEmail('bob'));
    const id = (await admin.post('/api/rest/_organizations', { name: 'Cache Co', ownerId: ada.userId })).body.organization.id;
    expect((await admin.post(`/api/rest/_organizations/${id}/members`, { userId: bob.userId, role: 'member' })).status).to.equal(201);
    const sw = await http.post('/auth/organizations/active', { organizationId: id }, bearer(bob.accessToken));
    expect(decodeJwt(sw.body.accessToken)).to.include({ org_id: id });
    expect((await http.get('/auth/me', bearer(sw.body.accessToken))).status).to.equal(200);
    expect((await http.delete(`/auth/organizations/${id}/members/${bob.userId}`, bearer(ada.accessToken))).status).to.equal(204);
    expect((await http.get('/auth/me', bearer(sw.body.accessToken))).status).to.equal(401);
    expect((await http.get('/auth/me', bearer(bob.accessToken))).status).to.equal(200);
    const after = await http.post('/auth/refresh-token', { refreshToken: sw.body.refreshToken });
    expect(decodeJwt(after.body.accessToken)).to.not.have.property('org_id');
  });
});
