import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { testCertificates } from './tls.js';
import { Webhook } from 'standardwebhooks';

export interface ReceivedRequest {
  at: number;
  method: string;
  path: string;
  headers: Record<string, string>;
  body: string;
  /** When the answer was sent (unset while held or hanging). */
  answeredAt?: number;
}

/** What the receiver does with a request: answer a status (and a body: `ok` unless told), hang, or redirect. */
export type Behaviour =
  { status: number; body?: string; headers?: Record<string, string>; after?: Promise<unknown> } | { hang: true } | { redirect: string };

/**
 * A real HTTPS subscriber on 127.0.0.1 with a certificate from the test CA. It records every
 * request (headers and raw body) and answers as it is told, per call.
 */
export class TestReceiver {
  readonly requests: ReceivedRequest[] = [];
  behave: (req: ReceivedRequest, index: number) => Behaviour = () => ({ status: 200 });
  #server: Server | undefined;
  #waiters: Array<{ count: number; resolve: () => void }> = [];

  async start(): Promise<void> {
    const { cert, key } = await testCertificates();
    this.#server = createServer({ cert, key }, (req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const received: ReceivedRequest = {
          at: Date.now(),
          method: req.method ?? '',
          path: req.url ?? '',
          headers: Object.fromEntries(Object.entries(req.headers).map(([k, v]) => [k, Array.isArray(v) ? v.join(', ') : (v ?? '')])),
          body: Buffer.concat(chunks).toString('utf8'),
        };
        const index = this.requests.length;
        this.requests.push(received);
        this.#waiters = this.#waiters.filter((w) => (this.requests.length >= w.count ? (w.resolve(), false) : true));
        const b = this.behave(received, index);
        if ('hang' in b) return; // never answers; the sender must time out
        if ('redirect' in b) {
          res.writeHead(302, { location: b.redirect }).end();
          return;
        }
        // `after`: the answer is held until then (e.g. until several requests are in flight at once).
        void Promise.resolve(b.after).then(() => {
          received.answeredAt = Date.now();
          const answer = Buffer.from(b.body ?? 'ok');
          res.writeHead(b.status, { 'content-type': 'text/plain', 'content-length': String(answer.length), ...b.headers }).end(answer);
        });
      });
    });
    // (No short keepAliveTimeout here: undici would then close every connection after one request.)
    // Small answers must not wait on Nagle's algorithm and the client's delayed ACK (40 ms each).
    this.#server.on('secureConnection', (socket) => socket.setNoDelay(true));
    await new Promise<void>((resolve) => this.#server!.listen(0, '127.0.0.1', resolve));
  }

  get url(): string {
    return `https://127.0.0.1:${(this.#server!.address() as AddressInfo).port}`;
  }

  /** Resolves once `count` requests have arrived; fails after the time-out. */
  async waitFor(count: number, timeoutMs = 10_000): Promise<ReceivedRequest[]> {
    if (this.requests.length >= count) return this.requests;
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`expected ${count} requests, received ${this.requests.length}`)), timeoutMs);
      this.#waiters.push({
        count,
        resolve: () => {
          clearTimeout(timer);
          resolve();
        },
      });
    });
    return this.requests;
  }

  async stop(): Promise<void> {
    this.#server?.closeAllConnections();
    await new Promise<void>((resolve) => this.#server?.close(() => resolve()) ?? resolve());
  }
}

/** Verifies a received request as a Standard Webhooks receiver holding only `secret` would. */
export function verifies(secret: string, r: ReceivedRequest): boolean {
  try {
    new Webhook(secret).verify(r.body, r.headers);
    return true;
  } catch {
    return false;
  }
}
