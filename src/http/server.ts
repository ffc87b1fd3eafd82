import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type express from 'express';

/**
 * Listens and resolves once the port is bound. Express 5 hands bind errors (address in use) to
 * the listen callback instead of throwing, so they are turned into a rejection here; otherwise a
 * second instance would report "listening" and serve nothing.
 */
export function listen(app: express.Express, port: number, host: string): Promise<{ server: Server; url: string }> {
  return new Promise((resolve, reject) => {
    const server = app.listen(port, host, (err?: Error) => {
      if (err) return reject(err);
      const address = server.address() as AddressInfo;
      const shownHost = address.family === 'IPv6' ? `[${address.address}]` : address.address;
      resolve({ server, url: `http://${shownHost}:${address.port}` });
    });
    // Keep-alive sockets must not outlive a graceful shutdown by more than their idle time.
    server.keepAliveTimeout = 5000;
    server.headersTimeout = 10000;
    server.requestTimeout = 30000;
  });
}

/** Stops accepting, lets in-flight requests finish (bounded), then closes idle keep-alive sockets. */
export async function closeServer(server: Server, timeoutMs = 10000): Promise<void> {
  await new Promise<void>((resolve) => {
    const timer = setTimeout(() => {
      server.closeAllConnections();
      resolve();
    }, timeoutMs);
    timer.unref();
    server.close(() => {
      clearTimeout(timer);
      resolve();
    });
    server.closeIdleConnections();
  });
}
