import type { Server } from 'node:http';
import type express from 'express';
import { KeyRing } from '../auth/keyring.js';
import { authRouter } from '../http/auth/routes.js';
import { providersRouter } from '../http/auth/providers/routes.js';
import { ProviderService } from '../auth/providers/service.js';
import { PasswordlessService } from '../auth/passwordless/service.js';
import { passwordlessRouter } from '../http/auth/passwordless/routes.js';
import { AuthService } from '../auth/service.js';
import { CacheEvents, CacheListener, type CacheEventHandler } from '../core/cache-events.js';
import { consoleRouter } from '../http/console/router.js';
import type { Context } from '../core/context.js';
import { docsRouter } from '../docs/router.js';
import { apiOpsRouter, metricsRouter } from '../ops/api-ops.js';
import { graphqlRouter } from '../graphql/router.js';
import { EnvironmentCache } from '../projects/environments.js';
import { webhooksRouter } from '../http/webhooks/routes.js';
import { environmentRouter } from '../http/environment/routes.js';
import { authEventsRouter, usersRouter } from '../http/users/routes.js';
import { UserAdminService } from '../auth/users/service.js';
import { ImpersonationService } from '../auth/users/impersonate.js';
import { OrganizationAdminService } from '../auth/organizations/admin.js';
import { organizationsAdminRouter } from '../http/organizations/routes.js';
import { gapsRouter } from '../http/gaps/routes.js';
import { destinationsRouter } from '../http/destinations/routes.js';
import { DestinationService } from '../webhooks/destinations/service.js';
import { GapService } from '../webhooks/gaps.js';
import { registerProblemGauge } from '../webhooks/problems-metric.js';
import { WebhookService } from '../webhooks/service.js';
import { createApp } from '../http/app.js';
import { closeServer, listen } from '../http/server.js';
import { listenErrorNamingSetting } from './port-setting.js';

/** The api daemon's HTTP surface. The seed addresses the management API through a `/gw` gateway prefix too. */
export function createApiApp(ctx: Context, events = new CacheEvents(ctx.log), service = new WebhookService(ctx)): express.Express {
  const environments = new EnvironmentCache(ctx.pool, ctx.cacheTtlMs);
  const keys = new KeyRing(ctx);
  events.subscribe(applyCacheEvent(ctx, environments, keys));
  const auth = new AuthService(ctx, keys);
  const providers = new ProviderService(ctx, auth.sessions, environments, auth.mfa);
  const passwordless = new PasswordlessService(ctx, auth.mfa);
  const webhooks = webhooksRouter(ctx, service, environments);
  const users = new UserAdminService(ctx);
  registerProblemGauge(ctx);
  return createApp(ctx, {
    routes: [
      ['/', apiOpsRouter(ctx)],
      ['/', docsRouter()],
      ['/', consoleRouter()],
      ['/auth', authRouter(auth, environments, users, ctx.config.publicUrl)],
      ['/auth', providersRouter(providers, environments)],
      ['/auth', passwordlessRouter(passwordless, environments)],
      ['/', graphqlRouter(ctx, auth, environments, providers, passwordless)],
      [['/api/rest/_webhooks', '/gw/api/rest/_webhooks'], webhooks],
      [['/api/rest/_environment', '/gw/api/rest/_environment'], environmentRouter(ctx, environments)],
      [['/api/rest/_users', '/gw/api/rest/_users'], usersRouter(ctx, users, environments, new ImpersonationService(ctx, auth.sessions))],
      [['/api/rest/_auth-events', '/gw/api/rest/_auth-events'], authEventsRouter(ctx, users, environments)],
      [
        ['/api/rest/_organizations', '/gw/api/rest/_organizations'],
        organizationsAdminRouter(ctx, new OrganizationAdminService(ctx), environments),
      ],
      [['/api/rest/_gaps', '/gw/api/rest/_gaps'], gapsRouter(ctx, new GapService(ctx), environments)],
      [['/api/rest/_destinations', '/gw/api/rest/_destinations'], destinationsRouter(ctx, new DestinationService(ctx), environments)],
    ],
  });
}

/** What an announced change (src/core/cache-events.ts) means to this process's caches. */
function applyCacheEvent(ctx: Context, environments: EnvironmentCache, keys: KeyRing): CacheEventHandler {
  return async (event) => {
    switch (event.kind) {
      case 'environment':
        environments.forget(event.projectId, event.name);
        keys.forget(event.projectId, event.name);
        return;
      case 'keys':
        keys.forget(event.projectId, event.name);
        return;
      case 'sessions': {
        // Written where this process looks (its own revocation list: Redis or Postgres), whatever the sender had.
        const until = new Date(event.until);
        for (const sessionId of event.sessionIds) await ctx.revocations.revoke(sessionId, until);
        return;
      }
      case 'all':
        environments.clear();
        keys.clear();
        return;
    }
  };
}

export interface RunningApi {
  url: string;
  server: Server;
  stop(): Promise<void>;
}

export async function startApi(ctx: Context, port = ctx.config.port, host = ctx.config.host): Promise<RunningApi> {
  const events = new CacheEvents(ctx.log);
  const listener = new CacheListener(ctx.pool.options.connectionString!, events, ctx.log);
  const service = new WebhookService(ctx);
  const app = createApiApp(ctx, events, service);
  await listener.start();
  // Replays whose process stopped before finishing them are taken up here.
  service.replays.start();
  // A port that is taken ends the start: what already holds a connection is let go, so that the
  // caller can stop the database (npm start) and exit without leaving anything behind.
  const abandon = async (err: unknown, setting: string, bound?: Server): Promise<never> => {
    if (bound) await closeServer(bound, 0);
    await listener.close();
    await service.replays.stop();
    throw listenErrorNamingSetting(err, setting, setting === 'PORT' ? port : ctx.config.metricsPort!, host);
  };
  const { server, url } = await listen(app, port, host, ctx.config.http).catch((err: unknown) => abandon(err, 'PORT'));
  // METRICS_PORT: the scrape target lives on a port of its own, which a deployment does not publish.
  const metricsPort = ctx.config.metricsPort;
  const metrics =
    metricsPort === undefined
      ? undefined
      : await listen(createApp(ctx, { routes: [['/', metricsRouter(ctx)]] }), metricsPort, host, ctx.config.http).catch((err: unknown) =>
          abandon(err, 'METRICS_PORT', server),
        );
  ctx.courier.start();
  return {
    url,
    server,
    async stop() {
      await listener.close();
      if (metrics) await closeServer(metrics.server);
      await closeServer(server);
      await service.replays.stop();
      await ctx.courier.stop();
    },
  };
}
