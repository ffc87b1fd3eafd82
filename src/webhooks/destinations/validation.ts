import type { Violation } from '../../core/errors.js';
import { checkHost, systemLookup, type HostLookup } from '../../core/net/address-policy.js';
import type { DestinationKind } from '../../delivery/destinations/address.js';
import type { Credentials } from '../../delivery/destinations/credentials.js';

const SCHEMES: Record<DestinationKind, string[]> = { nats: ['nats:'], rabbitmq: ['amqp:', 'amqps:'] };
const EXAMPLE: Record<DestinationKind, string> = { nats: 'nats://host:4222', rabbitmq: 'amqp://host:5672/vhost' };

/** A broker URL for its kind: the scheme, no credentials in it, and the address policy as for webhook URLs. */
export async function brokerUrlViolations(
  kind: DestinationKind,
  raw: string,
  allowPrivate: boolean,
  lookup: HostLookup = systemLookup,
): Promise<Violation[]> {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return [{ path: 'url', message: `must be an absolute URL like ${EXAMPLE[kind]}` }];
  }
  if (!SCHEMES[kind].includes(url.protocol)) {
    return [{ path: 'url', message: `must be a ${SCHEMES[kind].join(' or ')} URL for a ${kind} destination, like ${EXAMPLE[kind]}` }];
  }
  if (url.username || url.password) return [{ path: 'url', message: 'must not contain credentials: give username and password as fields' }];
  if (!url.hostname) return [{ path: 'url', message: `must name a host, like ${EXAMPLE[kind]}` }];
  if (url.search || url.hash) return [{ path: 'url', message: 'must have no query or fragment' }];
  if (kind === 'nats' && url.pathname !== '' && url.pathname !== '/')
    return [{ path: 'url', message: 'must have no path (nats://host:4222)' }];
  try {
    const check = await checkHost(url.hostname, allowPrivate, lookup);
    const refused = check.addresses.find((a) => a.reason);
    if (refused) {
      return [
        { path: 'url', message: `must not point to a ${refused.reason} address; set WEBHOOK_ALLOW_PRIVATE_NETWORKS=true to allow it` },
      ];
    }
    if (!check.allowed) return [{ path: 'url', message: `host ${url.hostname} has no address` }];
  } catch {
    return [{ path: 'url', message: `host ${url.hostname} does not resolve` }];
  }
  return [];
}

/** Which credentials a kind takes, together. */
export function credentialViolations(kind: DestinationKind, c: Credentials): Violation[] {
  const violations: Violation[] = [];
  if (kind === 'rabbitmq' && c.token !== undefined) {
    violations.push({ path: 'token', message: 'is for nats destinations; a rabbitmq destination takes username and password' });
  }
  if ((c.username === undefined) !== (c.password === undefined)) {
    const missing = c.username === undefined ? 'username' : 'password';
    violations.push({ path: missing, message: `is required with ${missing === 'username' ? 'password' : 'username'}` });
  }
  if (c.token !== undefined && c.username !== undefined) {
    violations.push({ path: 'token', message: 'cannot be given with username and password: NATS takes one or the other' });
  }
  return violations;
}
