import type { Queryable } from '../../core/db/pool.js';
import type { Violation } from '../../core/errors.js';
import type { HostLookup } from '../../core/net/address-policy.js';
import {
  encodeAddress,
  exchangeProblem,
  fillTemplate,
  namesKey,
  natsSubjectProblem,
  routingKeyProblem,
  templateProblems,
} from '../../delivery/destinations/address.js';
import type { Environment } from '../../projects/environments.js';
import type { Ordering } from '../ordering.js';
import { primaryKeyColumns, urlViolations } from '../validation.js';
import type { DestinationRef } from './schemas.js';
import { findDestination } from './store.js';

// Where a subscription delivers: an https: URL, or a destination of its environment with a
// subject (NATS) or an exchange and routing key (RabbitMQ). Either way it is stored in `url`
// (delivery/destinations/address.ts), with the destination's templates as sent beside it.

export interface SubscriptionTarget {
  url: string;
  destinationId: string | null;
  destinationSubject: string | null;
  destinationExchange: string | null;
  destinationRoutingKey: string | null;
}

/** What of the subscription `{key}` depends on: it is the row's key, so one row per message, ordered by that key. */
export interface KeyFacts {
  ordering: Ordering;
  events: readonly string[];
  select: readonly string[] | null;
  batchMaxEvents: number;
}

const NO_DESTINATION = { destinationId: null, destinationSubject: null, destinationExchange: null, destinationRoutingKey: null };

/** An https: URL (already checked) as a target: no destination. */
export function urlTarget(url: string): SubscriptionTarget {
  return { url, ...NO_DESTINATION };
}

/** The target a body names, checked: the URL against the address policy, the destination against its kind and its templates. */
export async function resolveTarget(
  db: Queryable,
  env: Environment,
  table: string,
  given: { url: string } | { destination: DestinationRef },
  net: { allowPrivateNetworks: boolean; lookup?: HostLookup },
  facts: KeyFacts,
): Promise<{ target: SubscriptionTarget | null; violations: Violation[] }> {
  if ('url' in given) {
    const violations = await urlViolations(given.url, net.allowPrivateNetworks, net.lookup);
    return { target: violations.length ? null : urlTarget(given.url), violations };
  }
  const ref = given.destination;
  const found = await findDestination(db, env.projectId, env.name, { name: ref.name });
  if (!found)
    return {
      target: null,
      violations: [{ path: 'destination.name', message: `no destination named ${JSON.stringify(ref.name)} in this environment` }],
    };
  // {schema} and {table} are fixed for the subscription; {event} is filled per message, so the
  // check fills it with each event name a message may carry.
  const fixed = { schema: env.schemaName, table };
  const violations: Violation[] = [];
  let keyColumns: string[] | undefined;
  const template = async (path: string, value: string, problem: (filled: string) => string | undefined) => {
    const unknown = templateProblems(value);
    if (unknown.length) return violations.push(...unknown.map((message) => ({ path, message })));
    if (namesKey(value)) {
      keyColumns = await primaryKeyColumns(db, env.schemaName, table);
      const why = keyProblem(keyColumns, facts);
      if (why) return violations.push({ path, message: `names {key}, the row's primary key: ${why}` });
    }
    // A key value is one token per key column whatever it holds (row-key.ts): `k` stands for each.
    const key = keyColumns?.map(() => 'k').join('.');
    for (const event of ['INSERT', 'UPDATE', 'DELETE', 'TRUNCATE', 'READ']) {
      const why = problem(fillTemplate(value, { ...fixed, event, ...(key ? { key } : {}) }));
      if (why) return violations.push({ path, message: `${why}, once {schema}, {table}, {event} and {key} are filled in` });
    }
    return 0;
  };
  if (found.kind === 'nats') {
    if (ref.exchange !== undefined || ref.routingKey !== undefined) {
      violations.push({ path: 'destination', message: `${ref.name} is a nats destination: give subject, not exchange and routingKey` });
    } else if (ref.subject === undefined) violations.push({ path: 'destination.subject', message: 'is required for a nats destination' });
    else await template('destination.subject', ref.subject, natsSubjectProblem);
    if (violations.length) return { target: null, violations };
    return {
      target: {
        url: encodeAddress({ kind: 'nats', destinationId: found.id, subject: fillTemplate(ref.subject!, fixed), keyColumns }),
        ...{ ...NO_DESTINATION, destinationId: found.id, destinationSubject: ref.subject! },
      },
      violations,
    };
  }
  if (ref.subject !== undefined) {
    violations.push({
      path: 'destination',
      message: `${ref.name} is a rabbitmq destination: give exchange and routingKey, not subject`,
    });
  }
  if (ref.exchange === undefined) violations.push({ path: 'destination.exchange', message: 'is required for a rabbitmq destination' });
  else {
    const why = exchangeProblem(ref.exchange);
    if (why) violations.push({ path: 'destination.exchange', message: why });
  }
  if (ref.routingKey === undefined) violations.push({ path: 'destination.routingKey', message: 'is required for a rabbitmq destination' });
  else await template('destination.routingKey', ref.routingKey, routingKeyProblem);
  if (violations.length) return { target: null, violations };
  return {
    target: {
      url: encodeAddress({
        kind: 'rabbitmq',
        destinationId: found.id,
        exchange: ref.exchange!,
        routingKey: fillTemplate(ref.routingKey!, fixed),
        keyColumns,
      }),
      ...{ ...NO_DESTINATION, destinationId: found.id, destinationExchange: ref.exchange!, destinationRoutingKey: ref.routingKey! },
    },
    violations,
  };
}

/** Why a subscription cannot fill `{key}` in: it is one row's key, known for row-ordered single-row messages. */
function keyProblem(keyColumns: readonly string[], f: KeyFacts): string | undefined {
  if (f.ordering !== 'row') return 'it needs ordering "row"';
  if (keyColumns.length === 0) return 'the table has no primary key';
  if (f.events.includes('TRUNCATE')) return 'a TRUNCATE has no row: leave it out of events';
  if (f.batchMaxEvents > 1) return 'a batch holds many rows: it needs no batching (batch.maxEvents 1)';
  const unselected = f.select ? keyColumns.filter((c) => !f.select!.includes(c)) : [];
  if (unselected.length) return `select must keep the key columns (${unselected.join(', ')}): the key is read from the record`;
  return undefined;
}

/** The destination a stored subscription names, as its body would (to resolve it again for another table). */
export function storedDestination(w: {
  destinationName?: string | null;
  destinationSubject?: string | null;
  destinationExchange?: string | null;
  destinationRoutingKey?: string | null;
}): DestinationRef | undefined {
  if (!w.destinationName) return undefined;
  return w.destinationSubject != null
    ? { name: w.destinationName, subject: w.destinationSubject }
    : { name: w.destinationName, exchange: w.destinationExchange ?? '', routingKey: w.destinationRoutingKey ?? '' };
}
