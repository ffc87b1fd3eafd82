import { GraphQLError } from 'graphql';
import { toAppError } from '../http/error-handler.js';
import type { ErrorCode } from '../core/errors.js';
import type { Logger } from '../core/log.js';

// GraphQL errors carry the REST error model: `extensions.code` is the REST `error` code, and the
// same details ride along (`violations`, `lockedUntil`, `retryAfter`). One mapping for both
// transports: toAppError, the REST error handler's.

/** graphql-http's messages for a request that is not GraphQL over HTTP (its parseRequestParams). */
const NOT_GRAPHQL = new Set([
  'Missing query',
  'Invalid query',
  'Invalid variables',
  'Invalid operationName',
  'Invalid extensions',
  'Missing body',
  'Unparsable JSON body',
  'JSON body must be an object',
  'Unparsable URL',
]);

export function formatError(log: Logger) {
  return (err: Readonly<GraphQLError | Error>): GraphQLError => {
    if (!(err instanceof GraphQLError) && NOT_GRAPHQL.has(err.message)) {
      // A request graphql-http could not read as GraphQL (answered 400): the client's mistake,
      // not ours — no stack, no error-level line. Resolvers' errors arrive wrapped in a GraphQLError.
      log.info({ reason: err.message }, 'graphql request refused');
      return new GraphQLError(err.message, { extensions: { code: 'GRAPHQL_BAD_REQUEST' satisfies ErrorCode } });
    }
    const graphqlError = err instanceof GraphQLError ? err : undefined;
    const cause = graphqlError ? graphqlError.originalError : err;
    if (!cause || cause instanceof GraphQLError) {
      // The document itself: syntax, unknown fields, wrong argument types, the size limits.
      return new GraphQLError(err.message, {
        nodes: graphqlError?.nodes,
        source: graphqlError?.source,
        positions: graphqlError?.positions,
        path: graphqlError?.path,
        extensions: { code: 'VALIDATION_ERROR', ...graphqlError?.extensions },
      });
    }
    const appError = toAppError(cause);
    if (appError.status >= 500) log.error({ err: cause }, 'graphql operation failed');
    return new GraphQLError(appError.message, {
      nodes: graphqlError?.nodes,
      positions: graphqlError?.positions,
      path: graphqlError?.path,
      extensions: { code: appError.code, ...appError.extra },
    });
  };
}
