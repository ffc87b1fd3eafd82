import { Router } from 'express';
import type { Context } from '../core/context.js';
import { databaseCheck, readiness, redisCheck } from './checks.js';
import { gapCheck, registerGapGauge } from './gaps.js';

/** /healthz (the process answers), /readyz (its dependencies do), /metrics (Prometheus). */
export function apiOpsRouter(ctx: Context): Router {
  const r = Router();
  registerGapGauge(ctx);
  r.get('/healthz', (_req, res) => {
    res.json({ status: 'ok' });
  });
  r.get('/readyz', async (_req, res) => {
    const { status, body } = readiness([await databaseCheck(ctx.pool, ctx.log), await redisCheck(ctx.redis, ctx.log), await gapCheck(ctx)]);
    res.status(status).json(body);
  });
  r.get('/metrics', async (_req, res) => {
    res.type(ctx.metrics.contentType).send(await ctx.metrics.text());
  });
  return r;
}
