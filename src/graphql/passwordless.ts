import type { PasswordlessService } from '../auth/passwordless/service.js';
import type { RequestMeta } from '../auth/service.js';
import { AppError } from '../core/errors.js';
import { passwordlessApi } from '../http/auth/passwordless/operations.js';
import { parse } from '../http/validate.js';
import type { Environment } from '../projects/environments.js';
import type { GraphQLContext } from './resolvers.js';

// The GraphQL twins of passwordless sign-in: each parses its input with the REST operation's own
// schema and calls the same service method, so limits, timing and errors are the REST ones.

interface Shared {
  env: (c: GraphQLContext) => Promise<Environment>;
  meta: (c: GraphQLContext) => RequestMeta & { ip: string };
  oneMutation: <T>(c: GraphQLContext, run: () => Promise<T>) => Promise<T>;
}

type Args = { input: unknown };

export function passwordlessResolvers(service: PasswordlessService | undefined, { env, meta, oneMutation }: Shared) {
  const op = passwordlessApi.operations;
  const served = () => {
    if (!service) throw new AppError('AUTH_NOT_CONFIGURED', 'Passwordless sign-in is not served by this api.');
    return service;
  };
  return {
    sendOtp: ({ input }: Args, c: GraphQLContext) =>
      oneMutation(c, async () => served().sendCode(await env(c), parse(op.otp.body, input), meta(c))),
    verifyOtp: ({ input }: Args, c: GraphQLContext) =>
      oneMutation(c, async () => served().verifyCode(await env(c), parse(op.otpVerify.body, input), meta(c))),
    sendMagicLink: ({ input }: Args, c: GraphQLContext) =>
      oneMutation(c, async () => served().sendMagicLink(await env(c), parse(op.magicLink.body, input), meta(c))),
    verifyMagicLink: ({ input }: Args, c: GraphQLContext) =>
      oneMutation(c, async () => served().verifyMagicLink(await env(c), parse(op.magicLinkVerify.body, input), meta(c))),
  };
}
