import type { Request } from 'express';
import ipaddr from 'ipaddr.js';

/**
 * The key of the client for per-IP limits and lockouts: its address as Express sees it (TRUST_PROXY
 * decides how much of X-Forwarded-For counts), with IPv6 addresses cut to their /64. One
 * subscriber line or host gets a whole /64, so keying by the full address would let it pick a
 * fresh one per request; IPv4-mapped IPv6 counts as the IPv4 address.
 */
export function clientIp(req: Request): string {
  return clientKey(req.ip ?? req.socket.remoteAddress ?? 'unknown');
}

export function clientKey(address: string): string {
  if (!ipaddr.isValid(address)) return address;
  const parsed = ipaddr.process(address); // ::ffff:a.b.c.d becomes a.b.c.d
  if (parsed.kind() === 'ipv4') return parsed.toString();
  const parts = (parsed as ipaddr.IPv6).parts.slice(0, 4);
  return `${parts.map((p) => p.toString(16)).join(':')}::/64`;
}
