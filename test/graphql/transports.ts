import type { HttpClient } from '../support/http.js';

// The authentication operations through either transport, answers normalised: `code` is the REST
// `error` or GraphQL's `extensions.code` (null on success), `details` what rides along with it
// (violations, lockedUntil, retryAfter), `body` the success body (REST JSON, or the GraphQL field).

export interface Outcome {
  code: string | null;
  body: any;
  details: Record<string, unknown>;
}

export interface Transport {
  name: 'rest' | 'graphql';
  signup(http: HttpClient, input: Record<string, unknown>): Promise<Outcome>;
  confirmSignup(http: HttpClient, input: Record<string, unknown>): Promise<Outcome>;
  login(http: HttpClient, input: Record<string, unknown>): Promise<Outcome>;
  recoverPassword(http: HttpClient, input: Record<string, unknown>): Promise<Outcome>;
  resetPassword(http: HttpClient, input: Record<string, unknown>): Promise<Outcome>;
  refreshToken(http: HttpClient, input: Record<string, unknown>): Promise<Outcome>;
  logout(http: HttpClient, accessToken?: string): Promise<Outcome>;
  me(http: HttpClient, accessToken?: string): Promise<Outcome>;
  jwks(http: HttpClient): Promise<Outcome>;
}

const auth = (token?: string) => (token === undefined ? {} : { headers: { authorization: `Bearer ${token}` } });

function restOutcome(res: { status: number; body: any }): Outcome {
  if (res.status < 400) return { code: null, body: res.body, details: {} };
  const { error, message: _message, ...details } = res.body ?? {};
  return { code: error ?? `HTTP ${res.status}`, body: undefined, details };
}

export const rest: Transport = {
  name: 'rest',
  signup: async (http, input) => restOutcome(await http.post('/auth/signup', input)),
  confirmSignup: async (http, input) => restOutcome(await http.post('/auth/confirm-signup', input)),
  login: async (http, input) => restOutcome(await http.post('/auth/login', input)),
  recoverPassword: async (http, input) => restOutcome(await http.post('/auth/recover-password', input)),
  resetPassword: async (http, input) => restOutcome(await http.post('/auth/reset-password', input)),
  refreshToken: async (http, input) => restOutcome(await http.post('/auth/refresh-token', input)),
  logout: async (http, token) => restOutcome(await http.post('/auth/logout', undefined, auth(token))),
  me: async (http, token) => restOutcome(await http.get('/auth/me', auth(token))),
  jwks: async (http) => restOutcome(await http.get('/auth/.well-known/jwks.json')),
};

const USER = 'id email name emailVerified createdAt';
const PAIR = 'accessToken refreshToken tokenType expiresIn';

/** Runs one operation over POST /graphql; `field` is the operation's top-level field. */
export async function graphqlCall(
  http: HttpClient,
  field: string,
  query: string,
  variables?: Record<string, unknown>,
  token?: string,
): Promise<Outcome> {
  const res = await http.post(
    '/graphql',
    { query, variables },
    { headers: { accept: 'application/graphql-response+json', ...auth(token).headers } },
  );
  const error = res.body?.errors?.[0];
  if (error) {
    const { code, ...details } = error.extensions ?? {};
    return { code: code ?? `HTTP ${res.status}`, body: undefined, details };
  }
  if (res.status !== 200) return { code: `HTTP ${res.status}`, body: undefined, details: {} };
  return { code: null, body: res.body.data[field], details: {} };
}

const mutation = (field: string, inputType: string, selection: string) => (http: HttpClient, input: Record<string, unknown>) =>
  graphqlCall(http, field, `mutation($input: ${inputType}!) { ${field}(input: $input) { ${selection} } }`, { input });

export const graphql: Transport = {
  name: 'graphql',
  signup: mutation('signup', 'SignupInput', 'userId message'),
  confirmSignup: mutation('confirmSignup', 'ConfirmSignupInput', `${PAIR} user { ${USER} }`),
  login: mutation('login', 'LoginInput', PAIR),
  recoverPassword: mutation('recoverPassword', 'RecoverPasswordInput', 'message'),
  resetPassword: mutation('resetPassword', 'ResetPasswordInput', 'message'),
  refreshToken: mutation('refreshToken', 'RefreshTokenInput', PAIR),
  logout: (http, token) => graphqlCall(http, 'logout', 'mutation { logout { message } }', undefined, token),
  me: (http, token) => graphqlCall(http, 'me', `{ me { user { ${USER} } session { id expiresAt } } }`, undefined, token),
  jwks: (http) => graphqlCall(http, 'jwks', '{ jwks { keys { kty kid alg use crv x y n e } } }'),
};

export const TRANSPORTS = [rest, graphql] as const;
