import { Router } from 'express';
import type { Context } from '../core/context.js';
import { databaseCheck, readiness, redisCheck } from './checks.js';

/**
 * /healthz (the process answers), /readyz (its dependencies do), /metrics (Prometheus) — unless
 * METRICS_PORT moves the metrics to a listener of their own (see metricsRouter).
 */
export function apiOpsRouter(ctx: Context): Router {
  const r = Router();
  r.get('/healthz', (_req, res) => {
    res.json({ status: 'ok' });
  });
  r.get('/readyz', async (_req, res) => {
    const { status, body } = readiness([await databaseCheck(ctx.pool, ctx.log), await redisCheck(ctx.redis, ctx.log)]);
    res.status(status).json(body);
  });
  if (ctx.config.metricsPort === undefined) r.use(metricsRouter(ctx));
  return r;
}

/** /metrics alone: on the api's port, or on METRICS_PORT, which a deployment keeps unpublished. */
export function metricsRouter(ctx: Context): Router {
  const r = Router();
  r.get('/metrics', async (_req, res) => {
    res.type(ctx.metrics.contentType).send(await ctx.metrics.text());
  });
  return r;
}
