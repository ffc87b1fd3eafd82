import type { Request } from 'express';
import { z } from 'zod';
import { DEFAULT_ENVIRONMENT, TENANT_NAME, TENANT_NAME_RULE, type Environment, type EnvironmentCache } from '../projects/environments.js';
import { AppError } from '../core/errors.js';
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
  const raw = { 'x-project-id': req.get('x-project-id'), environment: req.get('environment') };
  const h = parse(
    options.environmentRequired ? projectHeaders.required({ environment: true }) : projectHeaders,
    raw,
    'Missing or invalid project headers.',
  );
  return { projectId: h['x-project-id'], environment: h.environment ?? DEFAULT_ENVIRONMENT };
}

/** The environment for an auth request, or 404 AUTH_NOT_CONFIGURED (unknown, or auth switched off). */
export async function authEnvironment(req: Request, cache: EnvironmentCache): Promise<Environment> {
  const scope = readScope(req);
  const env = await cache.get(scope.projectId, scope.environment);
  if (!env || !env.authEnabled) throw new AppError('AUTH_NOT_CONFIGURED');
  return env;
}
