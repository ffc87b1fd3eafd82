import { Router, type Request } from 'express';
import { GraphQLError, NoSchemaIntrospectionCustomRule, specifiedRules } from 'graphql';
import { createHandler } from 'graphql-http/lib/use/express';
import type { AuthService } from '../auth/service.js';
import type { Context } from '../core/context.js';
import type { EnvironmentCache } from '../projects/environments.js';
import { formatError } from './errors.js';
import { sizeLimits } from './limits.js';
import { authResolvers, type GraphQLContext } from './resolvers.js';
import { authSchema } from './schema.js';

/**
 * POST /graphql (and GET for queries), by graphql-http: the GraphQL-over-HTTP specification,
 * with the authentication operations of the REST API on the same service.
 */
export function graphqlRouter(ctx: Context, service: AuthService, environments: EnvironmentCache): Router {
  const limits = ctx.config.graphql;
  const rules = [
    ...specifiedRules,
    sizeLimits(limits),
    ...(limits.introspection ? [] : [NoSchemaIntrospectionCustomRule]),
  ];
  const handler = createHandler<GraphQLContext>({
    schema: authSchema(),
    rootValue: authResolvers(service, environments),
    context: (req) => ({ req: req.raw as Request }),
    validationRules: rules,
    formatError: formatError(ctx.log),
    onSubscribe: (_req, params) => {
      if (Buffer.byteLength(params.query ?? '') > limits.maxDocumentBytes) {
        return [new GraphQLError(`The document is larger than ${limits.maxDocumentBytes} bytes.`, { extensions: { code: 'PAYLOAD_TOO_LARGE' } })];
      }
    },
  });
  const r = Router();
  r.all('/graphql', handler);
  return r;
}
