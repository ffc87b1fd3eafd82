import pg from 'pg';
import { keepReconnecting } from '../core/db/reconnect.js';
import { listenForDue } from './sql/queue.js';

/**
 * LISTEN for the tailer's "parked, due at" notifications on a connection of its own, reconnecting
 * until `signal` aborts. A hint to look now (or when the payload says), never the truth: the worker
 * polls as well. `onClient` gets the connection while it listens (null when it is gone).
 */
export async function listenForDueNotes(
  connectionString: string | undefined,
  onDue: (at: number) => void,
  onClient: (client: pg.Client | null) => boolean,
  signal: AbortSignal,
): Promise<void> {
  await keepReconnecting(
    async () => {
      const client = new pg.Client({ connectionString, application_name: 'walgate-delivery-listen' });
      try {
        const ended = new Promise<void>((resolve) => {
          client.on('error', () => resolve());
          client.on('end', () => resolve());
        });
        await client.connect();
        // The payload, when there is one, is when the first of what was parked is due (journal.ts).
        client.on('notification', (n) => onDue(Number(n.payload) || 0));
        await listenForDue(client);
        if (!onClient(client)) return;
        await ended;
      } finally {
        onClient(null);
        await client.end().catch(() => undefined);
      }
    },
    { signal, minMs: 500, maxMs: 10_000 },
  );
}
