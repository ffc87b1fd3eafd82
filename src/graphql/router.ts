import { Router, type Request } from 'express';
import { GraphQLError, NoSchemaIntrospectionCustomRule, specifiedRules } from 'graphql';
import { createHandler } from 'graphql-http/lib/use/express';
import type { AuthService } from '../auth/service.js';
import type { ProviderService } from '../auth/providers/service.js';
import type { PasswordlessService } from '../auth/passwordless/service.js';
import type { Context } from '../core/context.js';
import type { EnvironmentCache } from '../projects/environments.js';
import { authCors } from '../http/auth/cors.js';
import { formatError } from './errors.js';
import { boundedValidate } from './limits.js';
import { authResolvers, type GraphQLContext } from './resolvers.js';
import { authSchema } from './schema.js';

/**
 * POST /graphql (and GET for queries), by graphql-http: the GraphQL-over-HTTP specification,
 * with the authentication operations of the REST API on the same service, and the same CORS.
 */
export function graphqlRouter(
  ctx: Context,
  service: AuthService,
  environments: EnvironmentCache,
  providers?: ProviderService,
  passwordless?: PasswordlessService,
): Router {
  const limits = ctx.config.graphql;
  // The size limits run first, alone (boundedValidate); graphql's own rules only see documents within them.
  const rules = [...specifiedRules, ...(limits.introspection ? [] : [NoSchemaIntrospectionCustomRule])];
  const handler = createHandler<GraphQLContext>({
    schema: authSchema(),
    rootValue: authResolvers(service, environments, providers, passwordless),
    context: (req) => ({ req: req.raw as Request }),
    validate: boundedValidate(limits),
    // A function, so that graphql-http does not add specifiedRules a second time.
    validationRules: () => rules,
    formatError: formatError(ctx.log),
    onSubscribe: (_req, params) => {
      if (Buffer.byteLength(params.query ?? '') > limits.maxDocumentBytes) {
        return [
          new GraphQLError(`The document is larger than ${limits.maxDocumentBytes} bytes.`, { extensions: { code: 'PAYLOAD_TOO_LARGE' } }),
        ];
      }
    },
  });
  const r = Router();
  // The same per-environment CORS as /auth/*: a request names its environment in headers, a
  // preflight (which carries none) in ?projectId=&environment=, or else any environment's origins.
  r.use('/graphql', authCors(environments));
  r.all('/graphql', handler);
  return r;
}
