import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Context } from '../core/context.js';

/**
 * A daemon's own listener (the tailer's TAILER_PORT, a worker's WORKER_PORT): GET /healthz (the
 * process answers), /readyz (`ready` says what it depends on) and /metrics (its registry).
 */
export async function startOpsListener(
  ctx: Context,
  port: number,
  host: string,
  ready: () => Promise<{ status: number; body: unknown }>,
): Promise<{ server: Server; url: string }> {
  const server = createServer((req, res) => {
    const send = (status: number, body: unknown, type = 'application/json') => {
      res.writeHead(status, { 'content-type': type }).end(typeof body === 'string' ? body : JSON.stringify(body));
    };
    void (async () => {
      const path = (req.url ?? '/').split('?')[0];
      if (req.method !== 'GET') return send(405, { error: 'METHOD_NOT_ALLOWED', message: 'Only GET.' });
      if (path === '/healthz') return send(200, { status: 'ok' });
      if (path === '/metrics') return send(200, await ctx.metrics.text(), ctx.metrics.contentType);
      if (path === '/readyz') {
        const { status, body } = await ready();
        return send(status, body);
      }
      return send(404, { error: 'NOT_FOUND', message: 'No such route.' });
    })().catch(() => send(500, { error: 'INTERNAL_ERROR', message: 'Something went wrong on our side.' }));
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve());
  });
  const a = server.address() as AddressInfo;
  return { server, url: `http://${a.family === 'IPv6' ? `[${a.address}]` : a.address}:${a.port}` };
}
