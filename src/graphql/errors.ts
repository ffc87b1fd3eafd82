import { GraphQLError } from 'graphql';
import { toAppError } from '../http/error-handler.js';
import type { Logger } from '../core/log.js';

// GraphQL errors carry the REST error model: `extensions.code` is the REST `error` code, and the
// same details ride along (`violations`, `lockedUntil`, `retryAfter`). One mapping for both
// transports: toAppError, the REST error handler's.

export function formatError(log: Logger) {
  return (err: Readonly<GraphQLError | Error>): GraphQLError => {
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
