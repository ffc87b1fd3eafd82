import { lookup } from 'node:dns/promises';
import ipaddr from 'ipaddr.js';

// The SSRF guard: which addresses a webhook may be sent to. Only global unicast addresses pass,
// unless WEBHOOK_ALLOW_PRIVATE_NETWORKS is set (tests, self-hosting on a private network).
// The check that counts is on the address a connection actually uses (guarded-connector.ts);
// checking names at subscription time only gives an early, clear error.

/**
 * Why `ip` is refused, or undefined when it is allowed. IPv4-mapped spellings of a private IPv4
 * address are judged as that IPv4 address; IPv4-compatible ones (::/96) are refused outright.
 */
export function forbiddenAddressReason(ip: string): string | undefined {
  if (!ipaddr.isValid(ip)) return 'not an IP address';
  let addr = ipaddr.parse(ip);
  if (addr.kind() === 'ipv6') {
    const v6 = addr as ipaddr.IPv6;
    if (v6.isIPv4MappedAddress()) addr = v6.toIPv4Address();
    // IPv4-compatible (::/96, deprecated): `https://[::127.0.0.1]/` parses to [::7f00:1], which
    // ipaddr.js calls "unicast"; a host that still tunnels these reaches the embedded IPv4
    // address. Nothing legitimate lives there (:: and ::1 have their own ranges below).
    else if (v6.parts.slice(0, 6).every((p) => p === 0) && v6.range() === 'unicast') return 'ipv4Compatible';
  }
  const range = addr.range();
  return range === 'unicast' ? undefined : range;
}

export function isHostnameLiteral(host: string): boolean {
  const bare = host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host;
  return ipaddr.isValid(bare);
}

/**
 * Strict parsing of an IP literal as WHATWG URL parsing already normalised it: `https://0x7f.1/`
 * and `https://2130706433/` arrive here as 127.0.0.1, so no spelling slips past.
 */
export function hostAddress(url: URL): string | undefined {
  const host = url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname;
  return ipaddr.isValid(host) ? host : undefined;
}

/** Resolves a host name to every address it has (DNS, /etc/hosts). Injected, so tests can rebind names. */
export type HostLookup = (host: string) => Promise<Array<{ address: string; family: number }>>;

export const systemLookup: HostLookup = (host) => lookup(host, { all: true, verbatim: true });

export interface AddressCheck {
  allowed: boolean;
  /** The addresses the host resolved to, and why any was refused. */
  addresses: Array<{ address: string; reason?: string }>;
}

/** Resolves a host name and judges every address it has (all must pass: any could be the one used). */
export async function checkHost(host: string, allowPrivate: boolean, resolve: HostLookup = systemLookup): Promise<AddressCheck> {
  const bare = host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host;
  const resolved = ipaddr.isValid(bare) ? [{ address: bare }] : await resolve(bare);
  const addresses = resolved.map(({ address }) => {
    const reason = allowPrivate ? undefined : forbiddenAddressReason(address);
    return reason ? { address, reason } : { address };
  });
  return { allowed: addresses.length > 0 && addresses.every((a) => !a.reason), addresses };
}
