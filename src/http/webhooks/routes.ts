import { Router } from 'express';
import type { Context } from '../../core/context.js';
import { handle, refuseOtherMethods, reply } from '../operation.js';
import { parse } from '../validate.js';
import type { EnvironmentCache } from '../../projects/environments.js';
import { managementScope } from './access.js';
import { webhooksApi } from './operations.js';
import type { WebhookService } from '../../webhooks/service.js';
import { BackfillService } from '../../webhooks/backfills.js';
import { backfillRoutes } from './backfill-routes.js';

/** The management API for webhook subscriptions: /api/rest/_webhooks (and /gw/…). */
export function webhooksRouter(ctx: Context, service: WebhookService, environments: EnvironmentCache): Router {
  const r = Router();
  const op = webhooksApi.operations;
  const scope = (req: Parameters<typeof managementScope>[2]) => managementScope(ctx, environments, req);

  handle(r, op.listWebhookTables, async (req, res) => {
    const { env } = await scope(req);
    reply(res, op.listWebhookTables, await service.tables(env));
  });
  handle(r, op.listEnvironments, async (req, res) => {
    const { env } = await scope(req);
    reply(res, op.listEnvironments, await service.environments(env));
  });
  handle(r, op.searchEvent, async (req, res) => {
    const { env } = await scope(req);
    const { eventId } = parse(op.searchEvent.query, req.query);
    reply(res, op.searchEvent, await service.eventSearch(env, eventId));
  });
  handle(r, op.createWebhook, async (req, res) => {
    const { env } = await scope(req);
    reply(res, op.createWebhook, { webhook: await service.create(env, parse(op.createWebhook.body, req.body)) });
  });
  handle(r, op.listWebhooks, async (req, res) => {
    const { env } = await scope(req);
    const q = parse(op.listWebhooks.query, req.query);
    reply(res, op.listWebhooks, await service.list(env, q.limit, q.cursor));
  });
  handle(r, op.getWebhook, async (req, res) => {
    const { env } = await scope(req);
    const { id } = parse(op.getWebhook.params, req.params);
    reply(res, op.getWebhook, await service.get(env, id));
  });
  handle(r, op.updateWebhook, async (req, res) => {
    const { env } = await scope(req);
    const { id } = parse(op.updateWebhook.params, req.params);
    reply(res, op.updateWebhook, { webhook: await service.update(env, id, parse(op.updateWebhook.body, req.body)) });
  });
  handle(r, op.deleteWebhook, async (req, res) => {
    const { env } = await scope(req);
    const { id } = parse(op.deleteWebhook.params, req.params);
    await service.delete(env, id);
    reply(res, op.deleteWebhook);
  });
  handle(r, op.getReplay, async (req, res) => {
    const { env } = await scope(req);
    const { id, replayId } = parse(op.getReplay.params, req.params);
    reply(res, op.getReplay, await service.getReplay(env, id, replayId));
  });
  handle(r, op.replayWebhook, async (req, res) => {
    const { env } = await scope(req);
    const { id } = parse(op.replayWebhook.params, req.params);
    const range = parse(op.replayWebhook.body, req.body ?? {});
    reply(
      res,
      op.replayWebhook,
      await service.replay(
        env,
        id,
        {
          since: range.since ? new Date(range.since) : undefined,
          until: range.until ? new Date(range.until) : undefined,
        },
        range.dryRun,
      ),
    );
  });
  handle(r, op.listDeliveries, async (req, res) => {
    const { env } = await scope(req);
    const { id } = parse(op.listDeliveries.params, req.params);
    const q = parse(op.listDeliveries.query, req.query);
    reply(
      res,
      op.listDeliveries,
      await service.deliveries(env, id, {
        status: q.status,
        since: q.since ? new Date(q.since) : undefined,
        until: q.until ? new Date(q.until) : undefined,
        limit: q.limit,
        cursor: q.cursor,
      }),
    );
  });
  handle(r, op.getDelivery, async (req, res) => {
    const { env } = await scope(req);
    const { id, deliveryId } = parse(op.getDelivery.params, req.params);
    reply(res, op.getDelivery, await service.delivery(env, id, deliveryId));
  });
  handle(r, op.retryDelivery, async (req, res) => {
    const { env } = await scope(req);
    const { id, deliveryId } = parse(op.retryDelivery.params, req.params);
    reply(res, op.retryDelivery, await service.retry(env, id, deliveryId));
  });
  handle(r, op.discardDelivery, async (req, res) => {
    const { env } = await scope(req);
    const { id, deliveryId } = parse(op.discardDelivery.params, req.params);
    reply(res, op.discardDelivery, await service.discard(env, id, deliveryId));
  });
  handle(r, op.getDeliveryMinutes, async (req, res) => {
    const { env } = await scope(req);
    const { id } = parse(op.getDeliveryMinutes.params, req.params);
    reply(res, op.getDeliveryMinutes, await service.minutes(env, id));
  });

  handle(r, op.getWebhookHealth, async (req, res) => {
    const { env } = await scope(req);
    const { id } = parse(op.getWebhookHealth.params, req.params);
    reply(res, op.getWebhookHealth, await service.health(env, id));
  });
  handle(r, op.testWebhook, async (req, res) => {
    const { env } = await scope(req);
    const { id } = parse(op.testWebhook.params, req.params);
    reply(res, op.testWebhook, await service.test(env, id));
  });
  backfillRoutes(r, ctx, new BackfillService(ctx), environments);

  refuseOtherMethods(r, webhooksApi);
  return r;
}
