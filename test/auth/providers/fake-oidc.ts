import { createHash, randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { exportJWK, generateKeyPair, SignJWT, type CryptoKey, type JWK } from 'jose';

// A small hand-made OpenID provider for the refusals: discovery, keys, an authorization endpoint
// that answers at once (no login page), a token endpoint whose ID token can be made wrong in one
// way at a time, and a userinfo endpoint. The real provider (oidc-provider) is in the e2e test;
// this one can misbehave on purpose.

export interface IdTokenFault {
  nonce?: string;
  aud?: string;
  /** Seconds from now; negative: expired. */
  expiresIn?: number;
  /** Sign with a key that is not in the published key set. */
  foreignKey?: boolean;
}

export interface Person {
  sub: string;
  email?: string;
  email_verified?: boolean;
  name?: string;
}

export class FakeOidcProvider {
  readonly clientId = 'walgate-client';
  readonly clientSecret = randomBytes(16).toString('hex');
  url = '';
  /** The person the next sign-in is; the fault its ID token has. */
  person: Person = { sub: 'alice', email: 'alice@example.com', email_verified: true };
  fault: IdTokenFault = {};
  /** What walgate sent to the authorization endpoint last. */
  lastAuthorize: URLSearchParams | undefined;
  /** The token requests seen (form bodies and the Authorization header). */
  readonly tokenRequests: Array<{ form: URLSearchParams; authorization: string | undefined }> = [];

  #server: Server | undefined;
  #key!: { privateKey: CryptoKey; publicJwk: JWK };
  #foreign!: CryptoKey;
  readonly #codes = new Map<string, { nonce: string; challenge: string; person: Person; redirectUri: string }>();

  async start(): Promise<void> {
    const own = await generateKeyPair('ES256');
    this.#key = { privateKey: own.privateKey, publicJwk: { ...(await exportJWK(own.publicKey)), kid: 'own', alg: 'ES256', use: 'sig' } };
    this.#foreign = (await generateKeyPair('ES256')).privateKey;
    this.#server = createServer((req, res) => void this.#handle(req, res));
    await new Promise<void>((resolve) => this.#server!.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.#server.address() as { port: number }).port}`;
  }

  async stop(): Promise<void> {
    await new Promise<void>((resolve) => this.#server?.close(() => resolve()));
  }

  async #handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url!, this.url);
    const json = (status: number, body: unknown) => {
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(body));
    };
    if (url.pathname === '/.well-known/openid-configuration')
      return json(200, {
        issuer: this.url,
        authorization_endpoint: `${this.url}/authorize`,
        token_endpoint: `${this.url}/token`,
        userinfo_endpoint: `${this.url}/userinfo`,
        jwks_uri: `${this.url}/jwks`,
        response_types_supported: ['code'],
        subject_types_supported: ['public'],
        id_token_signing_alg_values_supported: ['ES256'],
        code_challenge_methods_supported: ['S256'],
        token_endpoint_auth_methods_supported: ['client_secret_basic'],
      });
    if (url.pathname === '/jwks') return json(200, { keys: [this.#key.publicJwk] });
    if (url.pathname === '/authorize') {
      this.lastAuthorize = url.searchParams;
      const q = url.searchParams;
      const code = randomBytes(16).toString('hex');
      this.#codes.set(code, {
        nonce: q.get('nonce')!,
        challenge: q.get('code_challenge')!,
        person: this.person,
        redirectUri: q.get('redirect_uri')!,
      });
      const back = new URL(q.get('redirect_uri')!);
      back.searchParams.set('code', code);
      back.searchParams.set('state', q.get('state')!);
      res.writeHead(302, { location: back.href });
      return void res.end();
    }
    if (url.pathname === '/token' && req.method === 'POST') {
      let raw = '';
      for await (const chunk of req) raw += chunk;
      const form = new URLSearchParams(raw);
      this.tokenRequests.push({ form, authorization: req.headers.authorization });
      const grant = this.#codes.get(form.get('code') ?? '');
      this.#codes.delete(form.get('code') ?? '');
      const verifier = form.get('code_verifier') ?? '';
      if (
        !grant ||
        createHash('sha256').update(verifier).digest('base64url') !== grant.challenge ||
        form.get('redirect_uri') !== grant.redirectUri
      )
        return json(400, { error: 'invalid_grant' });
      const now = Math.floor(Date.now() / 1000);
      const f = this.fault;
      const idToken = await new SignJWT({
        nonce: f.nonce ?? grant.nonce,
        email: grant.person.email,
        email_verified: grant.person.email_verified,
        name: grant.person.name,
      })
        .setProtectedHeader({ alg: 'ES256', kid: f.foreignKey ? 'stranger' : 'own' })
        .setIssuer(this.url)
        .setSubject(grant.person.sub)
        .setAudience(f.aud ?? this.clientId)
        .setIssuedAt(now - (f.expiresIn !== undefined && f.expiresIn < 0 ? 3600 : 0))
        .setExpirationTime(now + (f.expiresIn ?? 300))
        .sign(f.foreignKey ? this.#foreign : this.#key.privateKey);
      return json(200, { access_token: randomBytes(16).toString('hex'), token_type: 'Bearer', expires_in: 300, id_token: idToken });
    }
    if (url.pathname === '/userinfo') return json(200, this.person);
    json(404, { error: 'not_found' });
  }
}
