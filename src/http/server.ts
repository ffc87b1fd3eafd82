import { createServer, STATUS_CODES, type Server } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import type express from 'express';
import { AppError } from '../core/errors.js';

/** How long a client may take to send a request: its headers, and all of it (headers and body). */
export interface RequestDeadlines {
  headersTimeoutMs: number;
  requestTimeoutMs: number;
}

const DEFAULT_DEADLINES: RequestDeadlines = { headersTimeoutMs: 10_000, requestTimeoutMs: 30_000 };

/**
 * Listens and resolves once the port is bound; a bind error (address in use) rejects, so a second
 * instance cannot report "listening" and serve nothing.
 *
 * The deadlines are hard: a client that sends half its headers or half its body and then nothing
 * is answered 408 and cut off once its deadline passes, whatever the handler is waiting for. Node
 * checks them on a timer (`connectionsCheckingInterval`, 30 s by default, which would let a
 * deadline slip by that much): here a tenth of the headers deadline, at most a second.
 */
export function listen(
  app: express.Express,
  port: number,
  host: string,
  deadlines: RequestDeadlines = DEFAULT_DEADLINES,
): Promise<{ server: Server; url: string }> {
  return new Promise((resolve, reject) => {
    const server = createServer(
      {
        headersTimeout: deadlines.headersTimeoutMs,
        requestTimeout: deadlines.requestTimeoutMs,
        connectionsCheckingInterval: Math.max(50, Math.min(1000, Math.floor(deadlines.headersTimeoutMs / 10))),
      },
      app,
    );
    // Keep-alive sockets must not outlive a graceful shutdown by more than their idle time.
    server.keepAliveTimeout = 5000;
    server.on('clientError', answerClientError);
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      const address = server.address() as AddressInfo;
      const shownHost = address.family === 'IPv6' ? `[${address.address}]` : address.address;
      resolve({ server, url: `http://${shownHost}:${address.port}` });
    });
  });
}

/**
 * What Node would answer to a request it could not take (a deadline passed, headers too large or
 * unparsable), but in the error envelope every other answer uses; then the socket is closed.
 */
function answerClientError(err: Error & { code?: string }, socket: Socket): void {
  const pending = (socket as Socket & { _httpMessage?: { headersSent?: boolean } })._httpMessage;
  if (err.code === 'ECONNRESET' || !socket.writable || pending?.headersSent) {
    socket.destroy();
    return;
  }
  const error =
    err.code === 'ERR_HTTP_REQUEST_TIMEOUT'
      ? new AppError('REQUEST_TIMEOUT')
      : new AppError('VALIDATION_ERROR', 'The request could not be read as HTTP.', {
          violations: [{ path: '(request)', message: err.code === 'HPE_HEADER_OVERFLOW' ? 'headers too large' : 'malformed HTTP request' }],
        });
  const body = JSON.stringify(error.toBody());
  socket.end(
    `HTTP/1.1 ${error.status} ${STATUS_CODES[error.status]}\r\nConnection: close\r\nContent-Type: application/json; charset=utf-8\r\n` +
      `Cache-Control: no-store\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
  );
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
