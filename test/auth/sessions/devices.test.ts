import { expect } from 'chai';
import type { TestApi } from '../../support/api.js';
import type { HttpClient } from '../../support/http.js';
import { bearer, PASSWORD, signUpAndConfirm, startAuthApi, type Account } from '../support.js';

// A user sees their sessions (one per login, on any device) and ends them: one by id, the
// others, or all at logout. REST and GraphQL answer alike.

const SESSIONS = `query { sessions { sessions { id createdAt lastUsedAt ip userAgent current } } }`;
const END = `mutation ($id: ID!) { endSession(input: { id: $id }) { message } }`;
const LOGOUT = `mutation ($scope: LogoutScope) { logout(input: { scope: $scope }) { message } }`;

describe('auth sessions: the user sees and ends their sessions', () => {
  let t: TestApi;
  let http: HttpClient;

  before(async () => {
    t = await startAuthApi();
    ({ http } = await t.provision({ projectId: 'devices', name: 'master' }));
  });
  after(() => t.close());

  const loginAs = async (a: Account, userAgent: string) => {
    const r = await http.post('/auth/login', { email: a.email, password: PASSWORD }, { headers: { 'user-agent': userAgent } });
    expect(r.status).to.equal(200);
    return r.body as { accessToken: string; refreshToken: string };
  };
  const gql = (token: string, query: string, variables: Record<string, unknown> = {}) =>
    http.post('/graphql', { query, variables }, bearer(token));
  const alive = async (token: string) => (await http.get('/auth/me', bearer(token))).status === 200;

  it('GET /auth/sessions lists the live sessions with the current one marked; another user sees only theirs', async () => {
    const a = await signUpAndConfirm(t, http);
    const laptop = await loginAs(a, 'Laptop Browser/1.0');
    const phone = await loginAs(a, 'Phone App/2.0');
    const other = await signUpAndConfirm(t, http);

    const res = await http.get('/auth/sessions', bearer(phone.accessToken));
    expect(res.status).to.equal(200);
    const sessions = res.body.sessions as Array<Record<string, unknown>>;
    expect(sessions).to.have.length(3);
    for (const s of sessions) expect(s).to.have.all.keys('id', 'createdAt', 'lastUsedAt', 'ip', 'userAgent', 'current', 'impersonated');
    expect(sessions.every((s) => s.impersonated === false)).to.equal(true);
    expect(sessions.filter((s) => s.current)).to.have.length(1);
    expect(sessions.find((s) => s.current)!.userAgent).to.equal('Phone App/2.0');
    expect(sessions.map((s) => s.userAgent)).to.include('Laptop Browser/1.0');
    expect(sessions[0]!.ip).to.be.a('string');

    const theirs = await http.get('/auth/sessions', bearer(other.accessToken));
    expect(theirs.body.sessions).to.have.length(1);
    expect(laptop).to.be.an('object');
  });

  it("DELETE /auth/sessions/{id} ends that session only; another user's session id is 404", async () => {
    const a = await signUpAndConfirm(t, http);
    const laptop = await loginAs(a, 'Laptop');
    const other = await signUpAndConfirm(t, http);
    const list = await http.get('/auth/sessions', bearer(a.accessToken));
    const laptopId = (list.body.sessions as Array<{ id: string; userAgent: string }>).find((s) => s.userAgent === 'Laptop')!.id;

    const foreign = await http.delete(`/auth/sessions/${laptopId}`, bearer(other.accessToken));
    expect(foreign.status).to.equal(404);
    expect(foreign.body.error).to.equal('SESSION_NOT_FOUND');
    expect(await alive(laptop.accessToken)).to.equal(true);

    const ended = await http.delete(`/auth/sessions/${laptopId}`, bearer(a.accessToken));
    expect(ended.status).to.equal(200);
    expect(await alive(laptop.accessToken)).to.equal(false);
    expect((await http.post('/auth/refresh-token', { refreshToken: laptop.refreshToken })).status).to.equal(401);
    expect(await alive(a.accessToken)).to.equal(true);
    expect((await http.delete('/auth/sessions/not-a-uuid', bearer(a.accessToken))).status).to.equal(400);
  });

  it('logout scopes: others ends every other session, global all, local (the default) this one', async () => {
    const a = await signUpAndConfirm(t, http);
    const [one, two] = [await loginAs(a, 'one'), await loginAs(a, 'two')];
    const others = await http.post('/auth/logout', { scope: 'others' }, bearer(one.accessToken));
    expect(others.status).to.equal(200);
    expect([await alive(one.accessToken), await alive(two.accessToken), await alive(a.accessToken)]).to.deep.equal([true, false, false]);

    const [three, four] = [await loginAs(a, 'three'), await loginAs(a, 'four')];
    expect((await http.post('/auth/logout', undefined, bearer(three.accessToken))).status).to.equal(200);
    expect([await alive(three.accessToken), await alive(four.accessToken), await alive(one.accessToken)]).to.deep.equal([
      false,
      true,
      true,
    ]);

    expect((await http.post('/auth/logout', { scope: 'global' }, bearer(four.accessToken))).status).to.equal(200);
    expect([await alive(four.accessToken), await alive(one.accessToken)]).to.deep.equal([false, false]);
    expect((await http.post('/auth/refresh-token', { refreshToken: one.refreshToken })).status).to.equal(401);

    const bad = await http.post('/auth/logout', { scope: 'everywhere' }, bearer((await loginAs(a, 'five')).accessToken));
    expect(bad.status).to.equal(400);
    expect(bad.body.error).to.equal('VALIDATION_ERROR');
  });

  it('GraphQL: sessions, endSession and logout scopes answer like REST', async () => {
    const a = await signUpAndConfirm(t, http);
    const [one, two, three] = [await loginAs(a, 'g1'), await loginAs(a, 'g2'), await loginAs(a, 'g3')];
    const listed = await gql(one.accessToken, SESSIONS);
    expect(listed.status).to.equal(200);
    const sessions = listed.body.data.sessions.sessions as Array<{ id: string; userAgent: string; current: boolean }>;
    expect(sessions).to.have.length(4);
    expect(sessions.find((s) => s.current)!.userAgent).to.equal('g1');

    const ended = await gql(one.accessToken, END, { id: sessions.find((s) => s.userAgent === 'g2')!.id });
    expect(ended.body.data.endSession.message).to.be.a('string');
    expect(await alive(two.accessToken)).to.equal(false);
    const unknown = await gql(one.accessToken, END, { id: '00000000-0000-4000-8000-000000000000' });
    expect(unknown.body.errors[0].extensions.code).to.equal('SESSION_NOT_FOUND');

    expect((await gql(one.accessToken, LOGOUT, { scope: 'others' })).body.data.logout.message).to.be.a('string');
    expect([await alive(one.accessToken), await alive(three.accessToken)]).to.deep.equal([true, false]);
    expect((await gql(one.accessToken, 'mutation { logout { message } }')).body.data.logout.message).to.be.a('string');
    expect(await alive(one.accessToken)).to.equal(false);
  });
});
