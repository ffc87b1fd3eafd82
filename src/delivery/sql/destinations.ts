import type { Queryable } from '../../core/db/pool.js';

// A destination as a sender needs it (destinations/connections.ts caches it and reads it again
// now and then, so a PATCH of its URL or credentials reaches the tailer).

export interface DestinationTargetRow {
  id: string;
  kind: 'nats' | 'rabbitmq';
  url: string;
  credentials: Buffer | null;
  updated_at: Date;
}

export async function readDestination(db: Queryable, id: string): Promise<DestinationTargetRow | undefined> {
  const { rows } = await db.query<DestinationTargetRow>(
    'SELECT id, kind, url, credentials, updated_at FROM walgate.destinations WHERE id = $1',
    [id],
  );
  return rows[0];
}
