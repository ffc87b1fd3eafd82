import type { Request } from 'express';
import type { AuthService } from '../auth/service.js';
import type { ProviderService } from '../auth/providers/service.js';
import type { PasswordlessService } from '../auth/passwordless/service.js';
import { passwordlessResolvers } from './passwordless.js';
import { AppError, validationError } from '../core/errors.js';
import { mfaApi } from '../http/auth/mfa/operations.js';
import { providersApi } from '../http/auth/providers/operations.js';
import { authApi } from '../http/auth/operations.js';
import { clientIp } from '../http/client-ip.js';
import { authEnvironment } from '../http/scope.js';
import { parse } from '../http/validate.js';
import type { EnvironmentCache } from '../projects/environments.js';
import { organizationResolvers } from './organizations.js';

// Root resolvers: each parses its input with the REST operation's own schema and calls the same
// AuthService method, so every rule (validation, limits, lockout, timing, errors) is the REST one.

export const IDENTITY_REMOVED = 'The identity has been removed.';

export type GraphQLContext = {
  req: Request;
};

type Args<T> = { input: T };

export function authResolvers(
  service: AuthService,
  environments: EnvironmentCache,
  providers?: ProviderService,
  passwordless?: PasswordlessService,
) {
  const op = authApi.operations;
  const env = (c: GraphQLContext) => authEnvironment(c.req, environments);
  const meta = (c: GraphQLContext) => ({
    ip: clientIp(c.req),
    clientAddress: c.req.ip,
    userAgent: c.req.get('user-agent')?.slice(0, 512) ?? null,
    deviceToken: c.req.get('x-device-token'),
  });
  const sessions = service.sessions;
  // Aliases must not multiply work that REST does once per request: a document runs one auth
  // mutation (each costs a limiter round trip, lookups, perhaps a password hash or strength
  // estimate), and `me` or `jwks` asked for under many aliases is worked out once.
  const perRequest = new WeakMap<
    Request,
    {
      mutations: number;
      me?: Promise<unknown>;
      jwks?: Promise<unknown>;
      sessions?: Promise<unknown>;
      identities?: Promise<unknown>;
      mfaFactors?: Promise<unknown>;
    }
  >();
  const state = (c: GraphQLContext) => {
    let s = perRequest.get(c.req);
    if (!s) perRequest.set(c.req, (s = { mutations: 0 }));
    return s;
  };
  const oneMutation = <T>(c: GraphQLContext, run: () => Promise<T>): Promise<T> => {
    if (state(c).mutations++ > 0) {
      const error = new AppError('RATE_LIMIT_EXCEEDED', 'One authentication mutation per request: send the others separately.', {
        retryAfter: 1,
      });
      return Promise.reject(error);
    }
    return run();
  };
  const authorization = (c: GraphQLContext) => c.req.get('authorization');
  const pop = providersApi.operations;
  const withProviders = () => {
    if (!providers) throw new AppError('AUTH_NOT_CONFIGURED', 'Provider sign-in is not served by this api.');
    return providers;
  };
  const mfa = service.mfa;
  const mop = mfaApi.operations;
  // WebAuthn JSON travels as text in GraphQL (no JSON scalar); it is parsed, then checked by the REST schema.
  const json = (text: unknown, path: string) => {
    try {
      return typeof text === 'string' ? (JSON.parse(text) as unknown) : text;
    } catch {
      throw validationError([{ path, message: 'must be JSON text' }]);
    }
  };
  const withJson = (input: Record<string, unknown>) => ({ ...input, response: json(input.response, 'response') });
  const client = (c: GraphQLContext) => ({ clientAddress: c.req.ip ?? null, userAgent: c.req.get('user-agent')?.slice(0, 512) ?? null });
  return {
    ...passwordlessResolvers(passwordless, { env, meta, oneMutation }),
    ...organizationResolvers(service.organizations, { env, oneMutation, authorization, client }),
    mfaFactors: (_: unknown, c: GraphQLContext) => (state(c).mfaFactors ??= env(c).then((e) => mfa.listFactors(e, authorization(c)))),
    mfaTotpEnroll: ({ input }: Partial<Args<unknown>>, c: GraphQLContext) =>
      oneMutation(c, async () => mfa.enrollTotp(await env(c), authorization(c), parse(mop.totpEnroll.body, input ?? {}))),
    mfaTotpVerify: ({ input }: Args<unknown>, c: GraphQLContext) =>
      oneMutation(c, async () => mfa.verifyTotp(await env(c), authorization(c), parse(mop.totpVerify.body, input), meta(c))),
    mfaChallenge: ({ input }: Args<unknown>, c: GraphQLContext) =>
      oneMutation(c, async () => mfa.challenge(await env(c), parse(mop.mfaChallenge.body, input), meta(c))),
    mfaDeleteFactor: ({ input }: Args<unknown>, c: GraphQLContext) =>
      oneMutation(c, async () => mfa.deleteFactor(await env(c), authorization(c), parse(mop.deleteFactor.params, input).id, meta(c))),
    mfaRecoveryCodes: (_: unknown, c: GraphQLContext) =>
      oneMutation(c, async () => mfa.regenerateRecoveryCodes(await env(c), authorization(c), meta(c))),
    passkeyRegisterOptions: (_: unknown, c: GraphQLContext) =>
      oneMutation(c, async () => ({ optionsJSON: JSON.stringify(await mfa.passkeyRegisterOptions(await env(c), authorization(c))) })),
    passkeyRegisterVerify: ({ input }: Args<Record<string, unknown>>, c: GraphQLContext) =>
      oneMutation(c, async () =>
        mfa.passkeyRegisterVerify(await env(c), authorization(c), parse(mop.passkeyRegisterVerify.body, withJson(input)), meta(c)),
      ),
    passkeyLoginOptions: ({ input }: Partial<Args<unknown>>, c: GraphQLContext) =>
      oneMutation(c, async () => ({
        optionsJSON: JSON.stringify(await mfa.passkeyLoginOptions(await env(c), parse(mop.passkeyLoginOptions.body, input ?? {}), meta(c))),
      })),
    passkeyLoginVerify: ({ input }: Args<Record<string, unknown>>, c: GraphQLContext) =>
      oneMutation(c, async () => mfa.passkeyLoginVerify(await env(c), parse(mop.passkeyLoginVerify.body, withJson(input)), meta(c))),
    me: (_: unknown, c: GraphQLContext) => (state(c).me ??= env(c).then((e) => sessions.me(e, authorization(c)))),
    sessions: (_: unknown, c: GraphQLContext) => (state(c).sessions ??= env(c).then((e) => sessions.list(e, authorization(c)))),
    jwks: (_: unknown, c: GraphQLContext) => (state(c).jwks ??= env(c).then((e) => service.jwks(e))),
    signup: ({ input }: Args<unknown>, c: GraphQLContext) =>
      oneMutation(c, async () => service.signup(await env(c), parse(op.signup.body, input), meta(c))),
    confirmSignup: ({ input }: Args<unknown>, c: GraphQLContext) =>
      oneMutation(c, async () => service.confirmSignup(await env(c), parse(op.confirmSignup.body, input), meta(c))),
    login: ({ input }: Args<unknown>, c: GraphQLContext) =>
      oneMutation(c, async () => service.login(await env(c), parse(op.login.body, input), meta(c))),
    recoverPassword: ({ input }: Args<unknown>, c: GraphQLContext) =>
      oneMutation(c, async () => service.recoverPassword(await env(c), parse(op.recoverPassword.body, input), meta(c))),
    resetPassword: ({ input }: Args<unknown>, c: GraphQLContext) =>
      oneMutation(c, async () => service.resetPassword(await env(c), parse(op.resetPassword.body, input), meta(c))),
    refreshToken: ({ input }: Args<unknown>, c: GraphQLContext) =>
      oneMutation(c, async () => sessions.refresh(await env(c), parse(op.refreshToken.body, input), meta(c))),
    resendConfirmation: ({ input }: Args<unknown>, c: GraphQLContext) =>
      oneMutation(c, async () => service.resendConfirmation(await env(c), parse(op.resendConfirmation.body, input), meta(c))),
    logout: ({ input }: Partial<Args<unknown>>, c: GraphQLContext) =>
      oneMutation(c, async () => sessions.logout(await env(c), authorization(c), parse(op.logout.body, input ?? {}).scope, meta(c))),
    endSession: ({ input }: Args<unknown>, c: GraphQLContext) =>
      oneMutation(c, async () => sessions.end(await env(c), authorization(c), parse(op.endSession.params, input).id, meta(c))),
    identities: (_: unknown, c: GraphQLContext) =>
      (state(c).identities ??= env(c).then((e) => withProviders().identities(e, authorization(c)))),
    providerToken: ({ input }: Args<unknown>, c: GraphQLContext) =>
      oneMutation(c, async () => withProviders().exchange(await env(c), parse(pop.providerToken.body, input), meta(c))),
    unlinkIdentity: ({ input }: Args<unknown>, c: GraphQLContext) =>
      oneMutation(c, async () => {
        await withProviders().unlink(await env(c), authorization(c), parse(pop.unlinkIdentity.params, input).id, meta(c));
        return { message: IDENTITY_REMOVED };
      }),
  };
}
