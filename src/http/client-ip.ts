import type { Request } from 'express';

/** The client's address as Express sees it (TRUST_PROXY decides whether X-Forwarded-For counts). */
export function clientIp(req: Request): string {
  return req.ip ?? req.socket.remoteAddress ?? 'unknown';
}
