import type { Request, Response, Router } from 'express';
import type { z } from 'zod';
import { AppError, type ErrorCode } from '../core/errors.js';

// An HTTP operation is declared once: the router registers its handler at the declared method and
// path, parses with the declared schemas and answers with the declared status, and the OpenAPI
// document (src/docs/openapi.ts) is generated from the same objects. The reference therefore
// cannot describe a schema, a path or a status that the code does not use.

export type Method = 'get' | 'post' | 'patch' | 'delete';

/** Which bearer token an operation needs (declared as security schemes in the document). */
export type Security = 'accessToken' | 'managementToken';

export interface Operation {
  method: Method;
  /** Express path pattern, relative to the group's mount (`/:id`). */
  path: string;
  summary: string;
  /** Markdown. */
  description?: string;
  security?: Security;
  /** The request headers the operation reads (names lower-case, as Express sees them). */
  headers: z.ZodObject;
  params?: z.ZodObject;
  query?: z.ZodObject;
  body?: z.ZodType;
  /** False when an absent body counts as `{}`. */
  bodyRequired?: boolean;
  success: {
    status: number;
    description: string;
    /** Absent: no body (204). */
    schema?: z.ZodType;
    headers?: Record<string, { description: string; schema: z.ZodType }>;
  };
  /** Every error code the operation can answer with, whatever the cause. */
  errors: readonly ErrorCode[];
}

export interface OperationGroup {
  /** Groups the operations in the reference. */
  tag: string;
  description: string;
  /** Where the group's router is mounted on the api. */
  mount: string;
  /** Other mount paths of the same router (same operations, not repeated in the document). */
  aliases: readonly string[];
  operations: Record<string, Operation>;
}

// Error codes that whole families of operations share, named after where they arise.

/** Any request: a bug (500), or Postgres or Redis unreachable (503; protected requests fail closed). */
export const ANY_REQUEST_ERRORS = ['INTERNAL_ERROR', 'SERVICE_UNAVAILABLE'] as const satisfies readonly ErrorCode[];

/** A JSON body (src/http/app.ts): malformed or invalid (400), over 100 KB (413), not JSON (415). */
export const JSON_BODY_ERRORS = ['VALIDATION_ERROR', 'PAYLOAD_TOO_LARGE', 'UNSUPPORTED_MEDIA_TYPE'] as const satisfies readonly ErrorCode[];

/** Registers the operation's handler at its method and path. */
export function handle(router: Router, op: Operation, handler: (req: Request, res: Response) => Promise<void>): void {
  router[op.method](op.path, handler);
}

/** Answers with the operation's success status (and body, unless it is declared without one). */
export function reply(res: Response, op: Operation, body?: unknown): void {
  res.status(op.success.status);
  if (op.success.schema) res.json(body);
  else res.end();
}

/** Other methods on the group's paths are 405 rather than 404 (the path exists), with `Allow`. */
export function refuseOtherMethods(router: Router, group: OperationGroup): void {
  const methods = new Map<string, string[]>();
  for (const op of Object.values(group.operations)) methods.set(op.path, [...(methods.get(op.path) ?? []), op.method.toUpperCase()]);
  for (const [path, allowed] of methods) {
    // Express answers HEAD with the GET handler.
    const allow = (allowed.includes('GET') ? [...allowed, 'HEAD'] : allowed).join(', ');
    router.all(path, () => {
      throw new AppError('METHOD_NOT_ALLOWED', undefined, {}, { Allow: allow });
    });
  }
}
