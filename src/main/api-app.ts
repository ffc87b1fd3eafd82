import type { Server } from 'node:http';
import type express from 'express';
import { KeyRing } from '../auth/keyring.js';
import { authRouter } from '../http/auth/routes.js';
import { AuthService } from '../auth/service.js';
import type { Context } from '../core/context.js';
import { docsRouter } from '../docs/router.js';
import { apiOpsRouter } from '../ops/api-ops.js';
import { graphqlRouter } from '../graphql/router.js';
import { EnvironmentCache } from '../projects/environments.js';
import { webhooksRouter } from '../http/webhooks/routes.js';
import { WebhookService } from '../webhooks/service.js';
import { createApp } from '../http/app.js';
import { closeServer, listen } from '../http/server.js';

/** The api daemon's HTTP surface. The seed addresses the management API through a `/gw` gateway prefix too. */
export function createApiApp(ctx: Context): express.Express {
  const environments = new EnvironmentCache(ctx.pool, ctx.cacheTtlMs);
  const auth = new AuthService(ctx, new KeyRing(ctx));
  const webhooks = webhooksRouter(ctx, new WebhookService(ctx), environments);
  return createApp(ctx, {
    routes: [
      ['/', apiOpsRouter(ctx)],
      ['/', docsRouter()],
      ['/auth', authRouter(auth, environments)],
      ['/', graphqlRouter(ctx, auth, environments)],
      [['/api/rest/_webhooks', '/gw/api/rest/_webhooks'], webhooks],
    ],
  });
}

export interface RunningApi {
  url: string;
  server: Server;
  stop(): Promise<void>;
}

export async function startApi(ctx: Context, port = ctx.config.port, host = ctx.config.host): Promise<RunningApi> {
  const { server, url } = await listen(createApiApp(ctx), port, host);
  return { url, server, stop: () => closeServer(server) };
}
