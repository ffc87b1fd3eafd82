import { Router } from 'express';
import type { Context } from '../../core/context.js';
import { handle, refuseOtherMethods, reply } from '../operation.js';
import { parse } from '../validate.js';
import { updateEnvironment, type EnvironmentCache } from '../../projects/environments.js';
import { managementScope } from '../webhooks/access.js';
import { environmentApi } from './operations.js';
import { viewSettings } from '../../projects/settings.js';
import { claimsFunctionProblem } from '../../auth/claims/check.js';
import { validationError } from '../../core/errors.js';

/** GET and PATCH /api/rest/_environment (and /gw/…): the settings of the token's environment. */
export function environmentRouter(ctx: Context, environments: EnvironmentCache): Router {
  const r = Router();
  const op = environmentApi.operations;

  handle(r, op.getEnvironment, async (req, res) => {
    const { env } = await managementScope(ctx, environments, req);
    reply(res, op.getEnvironment, viewSettings(env.settings));
  });
  handle(r, op.updateEnvironment, async (req, res) => {
    const { env } = await managementScope(ctx, environments, req);
    const patch = parse(op.updateEnvironment.body, req.body);
    // Checked against the database now (it must exist, in this environment's schema, with the
    // right signature), not at the first login after the change.
    if (patch.claimsFunction) {
      const problem = await claimsFunctionProblem(ctx.pool, env, patch.claimsFunction);
      if (problem) throw validationError([{ path: 'claimsFunction', message: problem }], 'This claims function cannot be used.');
    }
    const updated = await updateEnvironment(ctx.pool, env.projectId, env.name, patch, ctx.secrets);
    // The NOTIFY reaches every process; this one need not wait for it.
    environments.forget(env.projectId, env.name);
    reply(res, op.updateEnvironment, updated && viewSettings(updated.settings));
  });

  refuseOtherMethods(r, environmentApi);
  return r;
}
