import type { Request } from 'express';
import type { AuthService } from '../auth/service.js';
import { authApi } from '../http/auth/operations.js';
import { clientIp } from '../http/client-ip.js';
import { authEnvironment } from '../http/scope.js';
import { parse } from '../http/validate.js';
import type { EnvironmentCache } from '../projects/environments.js';

// Root resolvers: each parses its input with the REST operation's own schema and calls the same
// AuthService method, so every rule (validation, limits, lockout, timing, errors) is the REST one.

export type GraphQLContext = {
  req: Request;
};

type Args<T> = { input: T };

export function authResolvers(service: AuthService, environments: EnvironmentCache) {
  const op = authApi.operations;
  const env = (c: GraphQLContext) => authEnvironment(c.req, environments);
  const meta = (c: GraphQLContext) => ({ ip: clientIp(c.req) });
  const authorization = (c: GraphQLContext) => c.req.get('authorization');
  return {
    me: async (_: unknown, c: GraphQLContext) => service.me(await env(c), authorization(c)),
    jwks: async (_: unknown, c: GraphQLContext) => service.jwks(await env(c)),
    signup: async ({ input }: Args<unknown>, c: GraphQLContext) => service.signup(await env(c), parse(op.signup.body, input), meta(c)),
    confirmSignup: async ({ input }: Args<unknown>, c: GraphQLContext) => service.confirmSignup(await env(c), parse(op.confirmSignup.body, input)),
    login: async ({ input }: Args<unknown>, c: GraphQLContext) => service.login(await env(c), parse(op.login.body, input), meta(c)),
    recoverPassword: async ({ input }: Args<unknown>, c: GraphQLContext) => service.recoverPassword(await env(c), parse(op.recoverPassword.body, input)),
    resetPassword: async ({ input }: Args<unknown>, c: GraphQLContext) => service.resetPassword(await env(c), parse(op.resetPassword.body, input)),
    refreshToken: async ({ input }: Args<unknown>, c: GraphQLContext) => service.refresh(await env(c), parse(op.refreshToken.body, input)),
    logout: async (_: unknown, c: GraphQLContext) => service.logout(await env(c), authorization(c)),
  };
}
