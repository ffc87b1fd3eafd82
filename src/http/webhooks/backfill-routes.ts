import type { Router } from 'express';
import type { Context } from '../../core/context.js';
import type { EnvironmentCache } from '../../projects/environments.js';
import type { BackfillService } from '../../webhooks/backfills.js';
import { handle, reply } from '../operation.js';
import { parse } from '../validate.js';
import { managementScope } from './access.js';
import { backfillOperations as op } from './backfill-operations.js';

/** /api/rest/_webhooks/{id}/backfill(s): registered on the webhook router (routes.ts). */
export function backfillRoutes(r: Router, ctx: Context, service: BackfillService, environments: EnvironmentCache): void {
  const scope = (req: Parameters<typeof managementScope>[2]) => managementScope(ctx, environments, req);
  handle(r, op.createBackfill, async (req, res) => {
    const { env } = await scope(req);
    const { id } = parse(op.createBackfill.params, req.params);
    reply(res, op.createBackfill, await service.create(env, id, parse(op.createBackfill.body, req.body ?? {})));
  });
  handle(r, op.listBackfills, async (req, res) => {
    const { env } = await scope(req);
    const { id } = parse(op.listBackfills.params, req.params);
    reply(res, op.listBackfills, await service.list(env, id));
  });
  handle(r, op.getBackfill, async (req, res) => {
    const { env } = await scope(req);
    const { id, backfillId } = parse(op.getBackfill.params, req.params);
    reply(res, op.getBackfill, await service.get(env, id, backfillId));
  });
  handle(r, op.cancelBackfill, async (req, res) => {
    const { env } = await scope(req);
    const { id, backfillId } = parse(op.cancelBackfill.params, req.params);
    reply(res, op.cancelBackfill, await service.cancel(env, id, backfillId));
  });
}
