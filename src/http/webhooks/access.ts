import type { Request } from 'express';
import type { Context } from '../../core/context.js';
import { bearerToken } from '../../auth/tokens.js';
import { AppError, validationError, type ErrorCode } from '../../core/errors.js';
import { enforceRateLimit } from '../../core/store/rate-limits.js';
import { parseHeaders, projectHeaders } from '../scope.js';
import type { Environment, EnvironmentCache } from '../../projects/environments.js';
import { authenticateManagementToken } from '../../webhooks/management-tokens.js';

/** managementScope: no live token (401), bad headers or environment (400), another project's token (403), 600/min per token (429). */
export const MANAGEMENT_SCOPE = [
  'AUTH_TOKEN_INVALID',
  'VALIDATION_ERROR',
  'FORBIDDEN',
  'RATE_LIMIT_EXCEEDED',
] as const satisfies readonly ErrorCode[];

export interface ManagementScope {
  tokenId: string;
  env: Environment;
}

/** The management API wants the environment named on every call, GET and DELETE included. */
export const managementHeaders = projectHeaders.extend({ environment: projectHeaders.shape.environment.unwrap() });

/**
 * Who may call the management API, checked in this order: a live management token (401), the
 * project headers (400), the token's project (403), the environment (400), the token's rate (429).
 */
export async function managementScope(ctx: Context, environments: EnvironmentCache, req: Request): Promise<ManagementScope> {
  const token = await authenticateManagementToken(ctx.pool, bearerToken(req.get('authorization')), ctx.clock());
  if (!token) throw new AppError('AUTH_TOKEN_INVALID', 'The management token is missing, invalid or revoked.');
  const h = parseHeaders(managementHeaders, { 'x-project-id': req.get('x-project-id'), environment: req.get('environment') });
  if (h['x-project-id'] !== token.projectId) throw new AppError('FORBIDDEN');
  const env = await environments.get(h['x-project-id'], h.environment);
  if (!env)
    throw validationError([
      { path: 'environment', message: `the environment header names no environment of project ${h['x-project-id']}: ${h.environment}` },
    ]);
  await enforceRateLimit(ctx.rateLimiter, ctx.rateLimits.management, token.id);
  return { tokenId: token.id, env };
}
