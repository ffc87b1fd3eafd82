import type { ErrorRequestHandler, RequestHandler } from 'express';
import { ZodError } from 'zod';
import { isConnectionError, PgCode, pgCode } from '../core/db/pool.js';
import type { Logger } from '../core/log.js';
import { StoreUnavailableError } from '../core/store/unavailable.js';
import { AppError, validationError, violationsOf } from '../core/errors.js';

/** Turns anything thrown into the error envelope. Unknown errors are logged and answered as 500. */
export function toAppError(err: unknown): AppError {
  if (err instanceof AppError) return err;
  if (err instanceof ZodError) return validationError(violationsOf(err));
  const type = (err as { type?: unknown } | null)?.type;
  // body-parser's failures carry a `type`; map them before anything else looks at them.
  if (type === 'entity.parse.failed') {
    return validationError([{ path: '(body)', message: 'malformed JSON' }], 'The request body is not valid JSON.');
  }
  if (type === 'entity.too.large') return new AppError('PAYLOAD_TOO_LARGE');
  if (type === 'encoding.unsupported' || type === 'charset.unsupported') return new AppError('UNSUPPORTED_MEDIA_TYPE');
  if (type === 'request.aborted' || type === 'request.size.invalid' || type === 'stream.encoding.set') {
    return validationError([{ path: '(body)', message: 'incomplete request body' }]);
  }
  if (err instanceof StoreUnavailableError || isConnectionError(err)) return new AppError('SERVICE_UNAVAILABLE');
  // The router could not percent-decode a path parameter (`/api/rest/_webhooks/%E0%A4%A`).
  if (err instanceof URIError) {
    return validationError([{ path: '(path)', message: 'is not valid percent-encoding' }], 'The request URL is not valid.');
  }
  // Other client errors of the HTTP layer: body-parser's http-errors without a `type` (a gzip,
  // deflate or br body that does not decompress).
  const status = (err as { status?: unknown } | null)?.status;
  if (typeof status === 'number' && status >= 400 && status < 500 && (err as { expose?: unknown }).expose === true) {
    if (status === 413) return new AppError('PAYLOAD_TOO_LARGE');
    if (status === 415) return new AppError('UNSUPPORTED_MEDIA_TYPE');
    return validationError([{ path: '(body)', message: 'could not be read (is its Content-Encoding right?)' }]);
  }
  // Text Postgres cannot store (U+0000; 22021 character_not_in_repertoire, 22P05 in jsonb) that
  // reached a query by a path `parse` does not see — a GraphQL string literal, for one.
  const code = pgCode(err);
  if (code === PgCode.characterNotInRepertoire || code === PgCode.untranslatableCharacter) {
    return validationError([{ path: '(input)', message: 'must not contain a NUL character' }]);
  }
  return new AppError('INTERNAL_ERROR');
}

export function errorHandler(log: Logger): ErrorRequestHandler {
  return (err, req, res, _next) => {
    const appError = toAppError(err);
    if (appError.status >= 500) {
      (req.log ?? log).error({ err }, 'request failed');
    }
    if (res.headersSent) {
      res.destroy();
      return;
    }
    res.status(appError.status).set(challenge(appError)).set(appError.headers).json(appError.toBody());
  };
}

/** RFC 6750: a 401 names the scheme, and says when the token itself was the problem. */
function challenge(err: AppError): Record<string, string> {
  if (err.status !== 401) return {};
  const token = err.code === 'AUTH_TOKEN_INVALID' || err.code === 'AUTH_TOKEN_EXPIRED';
  return { 'WWW-Authenticate': token ? `Bearer realm="walgate", error="invalid_token"` : 'Bearer realm="walgate"' };
}

export const notFound: RequestHandler = (_req, _res, next) => next(new AppError('NOT_FOUND'));

/** Bodies must be JSON: a non-empty body of another type is refused before it is parsed. */
export const requireJsonBody: RequestHandler = (req, _res, next) => {
  const hasBody = Number(req.get('content-length') ?? 0) > 0 || req.get('transfer-encoding') !== undefined;
  if (hasBody && !req.is('application/json') && !req.is('application/*+json')) {
    next(new AppError('UNSUPPORTED_MEDIA_TYPE'));
    return;
  }
  next();
};

/**
 * A JSON body must be an object. `null`, `false`, `0`, `""` and arrays parse as JSON but are no
 * request of ours; worse, a falsy body makes graphql-http wait for a body stream that body-parser
 * has already read, which never ends — a request held open for as long as its client likes.
 */
export const requireObjectBody: RequestHandler = (req, _res, next) => {
  const body: unknown = req.body;
  if (body !== undefined && (body === null || typeof body !== 'object' || Array.isArray(body))) {
    next(validationError([{ path: '(body)', message: 'must be a JSON object' }], 'The request body must be a JSON object.'));
    return;
  }
  next();
};
