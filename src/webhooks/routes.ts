import { Router } from 'express';
import type { Context } from '../context.js';
import { AppError } from '../http/errors.js';
import { parse } from '../http/validate.js';
import type { EnvironmentCache } from '../projects/environments.js';
import { managementScope } from './access.js';
import { createBody, listQuery, replayBody, updateBody } from './schemas.js';
import type { WebhookService } from './service.js';

/** The management API for webhook subscriptions: /api/rest/_webhooks (and /gw/…). */
export function webhooksRouter(ctx: Context, service: WebhookService, environments: EnvironmentCache): Router {
  const r = Router();
  const scope = (req: Parameters<typeof managementScope>[2]) => managementScope(ctx, environments, req);

  r.post('/', async (req, res) => {
    const { env } = await scope(req);
    res.status(201).json({ webhook: await service.create(env, parse(createBody, req.body)) });
  });
  r.get('/', async (req, res) => {
    const { env } = await scope(req);
    const q = parse(listQuery, req.query);
    res.json(await service.list(env, q.limit, q.cursor));
  });
  r.get('/:id', async (req, res) => {
    const { env } = await scope(req);
    res.json(await service.get(env, req.params.id));
  });
  r.patch('/:id', async (req, res) => {
    const { env } = await scope(req);
    res.json({ webhook: await service.update(env, req.params.id, parse(updateBody, req.body)) });
  });
  r.delete('/:id', async (req, res) => {
    const { env } = await scope(req);
    await service.delete(env, req.params.id);
    res.status(204).end();
  });
  r.post('/:id/replay', async (req, res) => {
    const { env } = await scope(req);
    const range = parse(replayBody, req.body ?? {});
    res.status(202).json(
      await service.replay(env, req.params.id, {
        since: range.since ? new Date(range.since) : undefined,
        until: range.until ? new Date(range.until) : undefined,
      }),
    );
  });
  r.all(['/', '/:id', '/:id/replay'], () => {
    throw new AppError('METHOD_NOT_ALLOWED');
  });
  return r;
}
