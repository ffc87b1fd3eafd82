// Where a subscription to a broker destination publishes, written where an HTTPS subscription
// keeps its URL (walgate.webhooks.url): `walgate-nats://<destination id>/<subject>` or
// `walgate-amqp://<destination id>/<exchange>/<routing key>`. The breaker keys on that column,
// the retry queue reads it and the stream caches it, so a destination subscription goes through
// them unchanged; only the sender (senders.ts) looks inside. `{schema}` and `{table}` are
// resolved when the subscription is saved; `{event}` and `{key}` are left for each message. A
// template naming `{key}` carries the primary-key columns it is made of as `?key=<column>` (one
// each, in key order), read from the catalog when the subscription was saved (row-key.ts).

export const DESTINATION_KINDS = ['nats', 'rabbitmq'] as const;
export type DestinationKind = (typeof DESTINATION_KINDS)[number];

export const NATS_SCHEME = 'walgate-nats:';
export const AMQP_SCHEME = 'walgate-amqp:';

/** The placeholders a subject or routing key may name. */
export const PLACEHOLDERS = ['schema', 'table', 'event', 'key'] as const;
export type Placeholder = (typeof PLACEHOLDERS)[number];

export type DestinationAddress =
  | { kind: 'nats'; destinationId: string; subject: string; keyColumns?: string[] }
  | { kind: 'rabbitmq'; destinationId: string; exchange: string; routingKey: string; keyColumns?: string[] };

export function encodeAddress(a: DestinationAddress): string {
  const key = a.keyColumns?.length ? `?${new URLSearchParams(a.keyColumns.map((c): [string, string] => ['key', c])).toString()}` : '';
  if (a.kind === 'nats') return `${NATS_SCHEME}//${a.destinationId}/${encodeURIComponent(a.subject)}${key}`;
  return `${AMQP_SCHEME}//${a.destinationId}/${encodeURIComponent(a.exchange)}/${encodeURIComponent(a.routingKey)}${key}`;
}

/** The address inside a stored URL; undefined for an https: URL. */
export function decodeAddress(url: URL): DestinationAddress | undefined {
  const parts = url.pathname.split('/').slice(1).map(decodeURIComponent);
  const keyColumns = url.searchParams.getAll('key');
  const key = keyColumns.length ? { keyColumns } : {};
  if (url.protocol === NATS_SCHEME) return { kind: 'nats', destinationId: url.host, subject: parts[0] ?? '', ...key };
  if (url.protocol === AMQP_SCHEME)
    return { kind: 'rabbitmq', destinationId: url.host, exchange: parts[0] ?? '', routingKey: parts[1] ?? '', ...key };
  return undefined;
}

/** True for a stored URL that names a destination rather than an HTTPS endpoint. */
export function isDestinationUrl(url: string): boolean {
  return url.startsWith(NATS_SCHEME) || url.startsWith(AMQP_SCHEME);
}

const PLACEHOLDER = /\{([^{}]*)\}/g;

/** Placeholders that are not `{schema}`, `{table}`, `{event}` or `{key}`, and stray braces. */
export function templateProblems(template: string): string[] {
  const problems: string[] = [];
  for (const m of template.matchAll(PLACEHOLDER)) {
    if (!(PLACEHOLDERS as readonly string[]).includes(m[1]!)) {
      problems.push(`names an unknown placeholder {${m[1]}}: only {schema}, {table}, {event} and {key} are known`);
    }
  }
  if (/[{}]/.test(template.replace(PLACEHOLDER, ''))) problems.push('has a brace that opens or closes no placeholder');
  return problems;
}

/** Replaces the placeholders that `values` names; the others stay. */
export function fillTemplate(template: string, values: Partial<Record<Placeholder, string>>): string {
  return template.replace(PLACEHOLDER, (whole, name: string) => values[name as keyof typeof values] ?? whole);
}

/** True when a subject or routing key names `{key}`. */
export function namesKey(template: string): boolean {
  return template.includes('{key}');
}

/**
 * Why a subject cannot be published to (NATS: tokens split by `.`, none empty, no whitespace, and
 * no wildcard — `*` and `>` subscribe to many subjects, a publish names one).
 */
export function natsSubjectProblem(subject: string): string | undefined {
  if (subject.length === 0) return 'must not be empty';
  if (Buffer.byteLength(subject) > 1024) return 'must be at most 1024 bytes';
  if (/\s/u.test(subject)) return `must not contain whitespace (${JSON.stringify(subject)})`;
  const tokens = subject.split('.');
  if (tokens.some((t) => t.length === 0))
    return `must not have an empty token: no leading, trailing or double dot (${JSON.stringify(subject)})`;
  if (tokens.some((t) => t === '*' || t === '>'))
    return `must not contain a wildcard token (* or >): a publish names one subject (${JSON.stringify(subject)})`;
  return undefined;
}

/** Why a RabbitMQ exchange name is refused (the broker's own rule: letters, digits, - _ . :, at most 255 bytes; "" is the default exchange). */
export function exchangeProblem(exchange: string): string | undefined {
  if (exchange.length > 255) return 'must be at most 255 characters';
  if (!/^[A-Za-z0-9\-_.:]*$/.test(exchange)) return `may hold only letters, digits and - _ . : (${JSON.stringify(exchange)})`;
  return undefined;
}

/** Why a routing key is refused: AMQP 0-9-1 carries it as a short string (at most 255 bytes). */
export function routingKeyProblem(key: string): string | undefined {
  if (Buffer.byteLength(key) > 255) return `must be at most 255 bytes once filled in (${JSON.stringify(key.slice(0, 40))}…)`;
  return undefined;
}
