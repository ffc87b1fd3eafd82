import type { ConnectionOptions } from 'node:tls';
import { buildConnector } from 'undici';
import { forbiddenAddressReason, isHostnameLiteral, systemLookup, type HostLookup } from './address-policy.js';

export class ForbiddenAddressError extends Error {
  override name = 'ForbiddenAddressError';
  readonly code = 'WALGATE_FORBIDDEN_ADDRESS';
}

/**
 * A connector for undici that resolves the host itself, refuses private, loopback, link-local,
 * metadata (and IPv4-mapped forms of those) addresses unless allowed, and then connects to the very
 * address it checked — with the host name kept for SNI and certificate checks. A name that
 * resolves to a public address at subscription time and to 127.0.0.1 at delivery time (DNS
 * rebinding) is caught here.
 */
export function guardedConnector(options: {
  allowPrivate: boolean;
  tls?: ConnectionOptions;
  timeoutMs: number;
  /** How the host is resolved (the system resolver; tests inject one to rebind a name). */
  lookup?: HostLookup;
  /** The setting that allows private addresses, named in the refusal (as the subscription-time check does). */
  setting?: string;
}): buildConnector.connector {
  const lookup = options.lookup ?? systemLookup;
  const allowedBy = options.setting ? `; set ${options.setting}=true to allow it` : '';
  const connect = buildConnector({ ...(options.tls ?? {}), timeout: options.timeoutMs } as buildConnector.BuildOptions);
  return (opts, callback) => {
    const host = opts.hostname.startsWith('[') ? opts.hostname.slice(1, -1) : opts.hostname;
    const resolve = isHostnameLiteral(host) ? Promise.resolve([{ address: host, family: host.includes(':') ? 6 : 4 }]) : lookup(host);
    resolve.then(
      (addresses) => {
        if (addresses.length === 0) return callback(new Error(`${host} has no address`), null);
        if (!options.allowPrivate) {
          for (const { address } of addresses) {
            const reason = forbiddenAddressReason(address);
            if (reason)
              // Not which address, nor which kind: what the name resolves to inside our network is not
              // the tenant's to learn.
              return callback(
                new ForbiddenAddressError(`refused to connect: ${host} resolves to a private or reserved address${allowedBy}`),
                null,
              );
          }
        }
        const chosen = addresses[0]!.address;
        const servername = opts.servername ?? (isHostnameLiteral(host) ? undefined : host);
        connect({ ...opts, hostname: chosen, ...(servername ? { servername } : {}) }, callback);
      },
      (err: Error) => callback(new Error(`cannot resolve ${host}: ${err.message}`), null),
    );
  };
}
