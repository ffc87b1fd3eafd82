import { Router } from 'express';
import type { Context } from '../core/context.js';
import { databaseCheck, readiness, redisCheck } from './checks.js';

/** /healthz (the process answers), /readyz (its dependencies do), /metrics (Prometheus). */
export function apiOpsRouter(ctx: Context): Router {
  const r = Router();
  r.get('/healthz', (_req, res) => {
    res.json({ status: 'ok' });
  });
  r.get('/readyz', async (_req, res) => {
    const { status, body } = readiness([await databaseCheck(ctx.pool, ctx.log), await redisCheck(ctx.redis, ctx.log)]);
    res.status(status).json(body);
  });
  r.get('/metrics', async (_req, res) => {
    res.type(ctx.metrics.contentType).send(await ctx.metrics.text());
  });
  return r;
}
