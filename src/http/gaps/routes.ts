import { Router } from 'express';
import type { Context } from '../../core/context.js';
import type { EnvironmentCache } from '../../projects/environments.js';
import type { GapService } from '../../webhooks/gaps.js';
import { BackfillService } from '../../webhooks/backfills.js';
import { handle, refuseOtherMethods, reply } from '../operation.js';
import { parse } from '../validate.js';
import { managementScope } from '../webhooks/access.js';
import { gapsApi } from './operations.js';

/** /api/rest/_gaps: capture gaps of the environment, and their acknowledgement. */
export function gapsRouter(ctx: Context, service: GapService, environments: EnvironmentCache): Router {
  const r = Router();
  const op = gapsApi.operations;
  handle(r, op.listGaps, async (req, res) => {
    const { env } = await managementScope(ctx, environments, req);
    const q = parse(op.listGaps.query, req.query);
    reply(res, op.listGaps, await service.list(env, q.open === 'true'));
  });
  handle(r, op.acknowledgeGap, async (req, res) => {
    const { env, tokenId } = await managementScope(ctx, environments, req);
    const { id } = parse(op.acknowledgeGap.params, req.params);
    reply(res, op.acknowledgeGap, await service.acknowledge(env, id, tokenId));
  });
  const backfills = new BackfillService(ctx);
  handle(r, op.backfillGap, async (req, res) => {
    const { env } = await managementScope(ctx, environments, req);
    const { id } = parse(op.backfillGap.params, req.params);
    reply(res, op.backfillGap, await backfills.fromGap(env, id));
  });
  refuseOtherMethods(r, gapsApi);
  return r;
}
