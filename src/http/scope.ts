import type { Request } from 'express';
import { z } from 'zod';
import { DEFAULT_ENVIRONMENT, TENANT_NAME, TENANT_NAME_RULE, type Environment, type EnvironmentCache } from '../projects/environments.js';
import { AppError, validationError, type Violation } from '../core/errors.js';
import { parse } from './validate.js';

// Every auth and management request names a project (`X-Project-Id`) and an environment
// (`environment`, default `master`).

const name = z.string().regex(TENANT_NAME, TENANT_NAME_RULE);

export const projectHeaders = z.object({
  'x-project-id': name.meta({ description: 'The project.', examples: ['demo'] }),
  environment: name.meta({ description: 'The environment of the project (default `master`).', examples: ['master'] }).optional(),
});

export interface Scope {
  projectId: string;
  environment: string;
}

export function readScope(req: Request, options: { environmentRequired?: boolean } = {}): Scope {
  const raw: Record<string, string | undefined> = { 'x-project-id': req.get('x-project-id'), environment: req.get('environment') };
  const schema = options.environmentRequired ? projectHeaders.required({ environment: true }) : projectHeaders;
  const h = parseHeaders(schema, raw);
  return { projectId: h['x-project-id'], environment: h.environment ?? DEFAULT_ENVIRONMENT };
}

/** Parses request headers; each violation says it is about a header. */
export function parseHeaders<S extends z.ZodType>(schema: S, raw: Record<string, string | undefined>): z.output<S> {
  try {
    return parse(schema, raw, 'Missing or invalid project headers.');
  } catch (err) {
    throw asHeaderViolations(err, raw);
  }
}

const HEADER_NAMES: Record<string, string> = { 'x-project-id': 'X-Project-Id', environment: 'environment' };

/**
 * Each violation says it is about a header: "expected string, received undefined" at `environment`
 * sent people looking for a body field.
 */
function asHeaderViolations(err: unknown, raw: Record<string, string | undefined>): unknown {
  if (!(err instanceof AppError) || err.code !== 'VALIDATION_ERROR') return err;
  const violations = (err.extra.violations as Violation[]).map((v) => {
    const header = HEADER_NAMES[v.path] ?? v.path;
    return { path: v.path, message: raw[v.path] === undefined ? `the ${header} header is required` : `the ${header} header ${v.message}` };
  });
  return validationError(violations, err.message);
}

/** The environment for an auth request, or 404 AUTH_NOT_CONFIGURED (unknown, or auth switched off). */
export async function authEnvironment(req: Request, cache: EnvironmentCache): Promise<Environment> {
  const scope = readScope(req);
  const env = await cache.get(scope.projectId, scope.environment);
  if (!env || !env.authEnabled) throw new AppError('AUTH_NOT_CONFIGURED');
  return env;
}
