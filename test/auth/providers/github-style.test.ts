import { randomBytes } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createServer, type Server } from 'node:http';
import { expect } from 'chai';
import { decodeJwt } from 'jose';
import type { TestApi } from '../../support/api.js';
import type { HttpClient } from '../../support/http.js';
import { walgate } from '../../support/cli.js';
import { bearer, signUpAndConfirm, uniqueEmail } from '../support.js';
import { pkce, setProviders, startProviderApi, walkSignIn } from './support.js';

// A GitHub-style OAuth 2.0 provider (no OpenID Connect: no discovery, no ID token): a small
// server with the authorize, token and user endpoints GitHub has, and its `/user/emails` list,
// which is where GitHub says whether an address is verified.

const APP = 'https://app.example.com/auth/done';
const PROJECT = 'gh';

interface Account {
  id: number;
  login: string;
  name: string;
  /** The public address on the profile (may be null). */
  email: string | null;
  emails: Array<{ email: string; primary: boolean; verified: boolean }>;
}

class GitHubStyleServer {
  readonly clientId = 'Iv1.walgate';
  readonly clientSecret = randomBytes(20).toString('hex');
  url = '';
  account!: Account;
  readonly tokenForms: URLSearchParams[] = [];
  lastAuthorize: URLSearchParams | undefined;
  #server!: Server;
  readonly #codes = new Map<string, Account>();
  readonly #tokens = new Map<string, Account>();

  async start(): Promise<void> {
    this.#server = createServer(async (req, res) => {
      const url = new URL(req.url!, this.url);
      const json = (status: number, body: unknown) =>
        res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
      if (url.pathname === '/login/oauth/authorize') {
        this.lastAuthorize = url.searchParams;
        const code = randomBytes(10).toString('hex');
        this.#codes.set(code, this.account);
        const back = new URL(url.searchParams.get('redirect_uri')!);
        back.searchParams.set('code', code);
        back.searchParams.set('state', url.searchParams.get('state')!);
        return void res.writeHead(302, { location: back.href }).end();
      }
      if (url.pathname === '/login/oauth/access_token' && req.method === 'POST') {
        let raw = '';
        for await (const chunk of req) raw += chunk;
        const form = new URLSearchParams(raw);
        this.tokenForms.push(form);
        const account = this.#codes.get(form.get('code') ?? '');
        this.#codes.delete(form.get('code') ?? '');
        if (form.get('client_id') !== this.clientId || form.get('client_secret') !== this.clientSecret)
          return json(401, { error: 'invalid_client' });
        if (!account) return json(400, { error: 'bad_verification_code' });
        const token = `gho_${randomBytes(16).toString('hex')}`;
        this.#tokens.set(token, account);
        return json(200, { access_token: token, token_type: 'bearer', scope: 'read:user,user:email' });
      }
      const account = this.#tokens.get((req.headers.authorization ?? '').replace(/^Bearer /i, ''));
      if (!account) return json(401, { message: 'Bad credentials' });
      if (url.pathname === '/user') return json(200, { id: account.id, login: account.login, name: account.name, email: account.email });
      if (url.pathname === '/user/emails') return json(200, account.emails);
      json(404, { message: 'Not Found' });
    });
    await new Promise<void>((resolve) => this.#server.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.#server.address() as { port: number }).port}`;
  }

  stop(): Promise<void> {
    return new Promise((resolve) => this.#server.close(() => resolve()));
  }
}

/** The provider settings of the test's GitHub-style server, under `id`. */
const providerOf = (gh: GitHubStyleServer, id: string) => ({
  id,
  kind: 'oauth2',
  clientId: gh.clientId,
  clientSecret: gh.clientSecret,
  authorizationUrl: `${gh.url}/login/oauth/authorize`,
  tokenUrl: `${gh.url}/login/oauth/access_token`,
  userinfoUrl: `${gh.url}/user`,
  emailsUrl: `${gh.url}/user/emails`,
  allowedRedirectUrls: [APP],
});

describe('auth providers: a GitHub-style OAuth 2.0 provider (authorize, token, user and emails endpoints)', function () {
  this.timeout(120_000);
  let t: TestApi;
  let http: HttpClient;
  let gh: GitHubStyleServer;

  before(async () => {
    t = await startProviderApi();
    ({ http } = await t.provision({ projectId: PROJECT, name: 'master' }));
    gh = new GitHubStyleServer();
    await gh.start();
    await setProviders(t, PROJECT, [{ ...providerOf(gh, 'github'), scopes: ['read:user', 'user:email'] }]);
  });
  after(async () => {
    await t.close();
    await gh.stop();
  });

  const signIn = async () => {
    const { verifier, challenge } = pkce();
    const { landing } = await walkSignIn(t, 'github', { projectId: PROJECT, redirectTo: APP, challenge });
    return { landing, verifier };
  };

  it('signs in with the verified primary address from the e-mail list; the same account signs in as the same user', async () => {
    const address = uniqueEmail('octo');
    gh.account = {
      id: 4242,
      login: 'octocat',
      name: 'The Octocat',
      email: null,
      emails: [
        { email: 'old@example.com', primary: false, verified: false },
        { email: address, primary: true, verified: true },
      ],
    };
    const { landing, verifier } = await signIn();
    const sent = gh.lastAuthorize!;
    expect(sent.get('scope')).to.equal('read:user user:email');
    expect(sent.get('code_challenge_method')).to.equal('S256');
    expect(sent.has('nonce'), 'no nonce for plain OAuth 2.0').to.equal(false);
    const form = gh.tokenForms.at(-1)!;
    expect(form.get('client_secret')).to.equal(gh.clientSecret); // client_secret_post, as GitHub documents
    expect(form.get('code_verifier')).to.match(/^[A-Za-z0-9_-]{43}$/);

    const pair = await http.post('/auth/providers/token', { code: landing.searchParams.get('code'), codeVerifier: verifier });
    expect(pair.status, JSON.stringify(pair.body)).to.equal(200);
    expect(decodeJwt(pair.body.accessToken).amr).to.deep.equal(['fed']);
    const me = await http.get('/auth/me', bearer(pair.body.accessToken));
    expect(me.body.user).to.include({ email: address, emailVerified: true, name: 'The Octocat' });
    const ids = await http.get('/auth/identities', bearer(pair.body.accessToken));
    expect(ids.body.identities.map((i: { provider: string; subject: string }) => [i.provider, i.subject])).to.deep.equal([
      ['github', '4242'],
    ]);

    // The address changed at GitHub since: still the same user (the identity is the account id, not the address).
    gh.account = { ...gh.account, emails: [{ email: uniqueEmail('moved'), primary: true, verified: true }] };
    const again = await signIn();
    const second = await http.post('/auth/providers/token', { code: again.landing.searchParams.get('code'), codeVerifier: again.verifier });
    expect((await http.get('/auth/me', bearer(second.body.accessToken))).body.user.id).to.equal(me.body.user.id);
  });

  it('refuses to link to an existing account when GitHub has not verified the address', async () => {
    const owner = await signUpAndConfirm(t, http);
    gh.account = {
      id: 777,
      login: 'impostor',
      name: 'Not the owner',
      email: owner.email,
      emails: [{ email: owner.email, primary: true, verified: false }],
    };
    const { landing } = await signIn();
    expect(landing.searchParams.get('error')).to.equal('AUTH_PROVIDER_LINK_UNVERIFIED');
    expect(landing.searchParams.get('code')).to.equal(null);
    const { rows } = await t.ctx.pool.query('SELECT count(*)::int AS n FROM walgate.identities WHERE user_id = $1', [owner.userId]);
    expect(rows[0].n).to.equal(0);
  });

  it('answers a provider that refuses the client (wrong secret) with AUTH_PROVIDER_RESPONSE_INVALID at the application', async () => {
    const shown = (await http.get('/api/rest/_environment', bearer(await t.managementToken(PROJECT)))).body.providers[0];
    const { clientSecretSet: _, ...rest } = shown;
    await setProviders(t, PROJECT, [{ ...rest, clientSecret: 'not-the-secret' }]);
    gh.account = { id: 1, login: 'x', name: 'x', email: null, emails: [{ email: uniqueEmail(), primary: true, verified: true }] };
    const { landing } = await signIn();
    expect(landing.searchParams.get('error')).to.equal('AUTH_PROVIDER_RESPONSE_INVALID');
    expect(landing.searchParams.get('error_description')).to.match(/invalid_client/);
    await setProviders(t, PROJECT, [{ ...rest, clientSecret: gh.clientSecret }]);
  });

  it('is configured with the CLI from a file (walgate project set --set providers=@file.json); the secret is sealed there too', async () => {
    const dir = await mkdtemp(path.join(tmpdir(), 'walgate-providers-'));
    try {
      const file = path.join(dir, 'providers.json');
      const provider = providerOf(gh, 'gh-cli');
      await writeFile(file, JSON.stringify([provider]));
      const r = await walgate(t, ['project', 'set', PROJECT, '--set', `providers=@${file}`]);
      expect(r.code, r.stderr).to.equal(0);
      expect(r.stdout).to.contain('"clientSecretSet": true');
      expect(r.stdout).not.to.contain(gh.clientSecret);
      const missing = await walgate(t, ['project', 'set', PROJECT, '--set', `providers=@${path.join(dir, 'nope.json')}`]);
      expect(missing.code).to.not.equal(0);
      expect(missing.stderr).to.contain('cannot read');
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
    gh.account = { id: 9, login: 'cli', name: 'C', email: null, emails: [{ email: uniqueEmail('cli'), primary: true, verified: true }] };
    const { verifier, challenge } = pkce();
    const { landing } = await walkSignIn(t, 'gh-cli', { projectId: PROJECT, redirectTo: APP, challenge });
    const pair = await http.post('/auth/providers/token', { code: landing.searchParams.get('code'), codeVerifier: verifier });
    expect(pair.status, JSON.stringify(pair.body)).to.equal(200);
  });
});
