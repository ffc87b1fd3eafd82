import { Router } from 'express';
import type { Context } from '../../core/context.js';
import type { EnvironmentCache } from '../../projects/environments.js';
import type { DestinationService } from '../../webhooks/destinations/service.js';
import { handle, refuseOtherMethods, reply } from '../operation.js';
import { parse } from '../validate.js';
import { managementScope } from '../webhooks/access.js';
import { destinationsApi } from './operations.js';

/** The management API for broker destinations: /api/rest/_destinations (and /gw/…). */
export function destinationsRouter(ctx: Context, service: DestinationService, environments: EnvironmentCache): Router {
  const r = Router();
  const op = destinationsApi.operations;
  const scope = (req: Parameters<typeof managementScope>[2]) => managementScope(ctx, environments, req);

  handle(r, op.createDestination, async (req, res) => {
    const { env } = await scope(req);
    reply(res, op.createDestination, { destination: await service.create(env, parse(op.createDestination.body, req.body)) });
  });
  handle(r, op.listDestinations, async (req, res) => {
    const { env } = await scope(req);
    reply(res, op.listDestinations, await service.list(env, parse(op.listDestinations.query, req.query).limit));
  });
  handle(r, op.getDestination, async (req, res) => {
    const { env } = await scope(req);
    reply(res, op.getDestination, await service.get(env, parse(op.getDestination.params, req.params).id));
  });
  handle(r, op.updateDestination, async (req, res) => {
    const { env } = await scope(req);
    const { id } = parse(op.updateDestination.params, req.params);
    reply(res, op.updateDestination, { destination: await service.update(env, id, parse(op.updateDestination.body, req.body)) });
  });
  handle(r, op.deleteDestination, async (req, res) => {
    const { env } = await scope(req);
    await service.delete(env, parse(op.deleteDestination.params, req.params).id);
    reply(res, op.deleteDestination);
  });

  refuseOtherMethods(r, destinationsApi);
  return r;
}
