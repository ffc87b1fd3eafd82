import { selectList } from '../../core/db/columns.js';
import type { Queryable } from '../../core/db/pool.js';
import type { DestinationKind } from '../../delivery/destinations/address.js';

// Every statement on walgate.destinations. Credentials are only ever stored sealed.

export interface DestinationRow {
  id: string;
  projectId: string;
  environment: string;
  name: string;
  kind: DestinationKind;
  url: string;
  credentials: Buffer | null;
  credentialNames: string[];
  createdAt: Date;
  updatedAt: Date;
}

const COLUMNS = selectList<DestinationRow>({
  id: 'id',
  projectId: 'project_id',
  environment: 'environment',
  name: 'name',
  kind: 'kind',
  url: 'url',
  credentials: 'credentials',
  credentialNames: 'credential_names',
  createdAt: 'created_at',
  updatedAt: 'updated_at',
});

/** The row, or undefined when the name is taken in the environment. */
export async function insertDestination(db: Queryable, d: DestinationRow): Promise<DestinationRow | undefined> {
  const { rows } = await db.query<DestinationRow>(
    `INSERT INTO walgate.destinations (id, project_id, environment, name, kind, url, credentials, credential_names, created_at, updated_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
     ON CONFLICT (project_id, environment, name) DO NOTHING RETURNING ${COLUMNS}`,
    [d.id, d.projectId, d.environment, d.name, d.kind, d.url, d.credentials, d.credentialNames, d.createdAt, d.updatedAt],
  );
  return rows[0];
}

export async function findDestination(
  db: Queryable,
  projectId: string,
  environment: string,
  by: { id: string } | { name: string },
  lock = false,
): Promise<DestinationRow | undefined> {
  const [column, value] = 'id' in by ? ['id', by.id] : ['name', by.name];
  const { rows } = await db.query<DestinationRow>(
    `SELECT ${COLUMNS} FROM walgate.destinations WHERE ${column} = $1 AND project_id = $2 AND environment = $3${lock ? ' FOR UPDATE' : ''}`,
    [value, projectId, environment],
  );
  return rows[0];
}

/** The environment's destinations by name (an environment has few: no cursor). */
export async function listDestinations(db: Queryable, projectId: string, environment: string, limit: number): Promise<DestinationRow[]> {
  const { rows } = await db.query<DestinationRow>(
    `SELECT ${COLUMNS} FROM walgate.destinations WHERE project_id = $1 AND environment = $2 ORDER BY name LIMIT $3`,
    [projectId, environment, limit],
  );
  return rows;
}

export async function updateDestination(db: Queryable, d: DestinationRow): Promise<DestinationRow> {
  const { rows } = await db.query<DestinationRow>(
    `UPDATE walgate.destinations SET url = $2, credentials = $3, credential_names = $4, updated_at = $5 WHERE id = $1 RETURNING ${COLUMNS}`,
    [d.id, d.url, d.credentials, d.credentialNames, d.updatedAt],
  );
  return rows[0]!;
}

/** The subscriptions that deliver to it, oldest first. */
export async function subscriptionsUsing(db: Queryable, destinationId: string): Promise<string[]> {
  const { rows } = await db.query<{ id: string }>('SELECT id FROM walgate.webhooks WHERE destination_id = $1 ORDER BY created_at, id', [
    destinationId,
  ]);
  return rows.map((r) => r.id);
}

export async function deleteDestination(db: Queryable, id: string): Promise<void> {
  await db.query('DELETE FROM walgate.destinations WHERE id = $1', [id]);
}
