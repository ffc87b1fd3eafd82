import { readFile, rename, writeFile } from 'node:fs/promises';
import type { Queryable } from '../core/db/pool.js';
import type { Logger } from '../core/log.js';
import { formatLsn, parseLsn, type Lsn } from './lsn.js';
import { readPosition } from './position.js';
import { recordTenantGaps } from './gaps.js';
import { activeAt } from './slot.js';
import { currentSubscriptions } from './subscriptions.js';

// A position that went backwards. Restoring the database from a backup, or a failover onto a
// standby that was behind, gives a server whose WAL ends before what the tailer already processed
// and delivered. The saved position (walgate.tailer_state) and the slot are restored with it, so
// the database itself cannot tell: only a memory outside it can. That memory is the highest
// position this process processed, and, with TAILER_STATE_FILE, the same in a small file that
// survives a restart of the tailer (and is not part of a database backup). A server whose WAL
// position is below it has lost history the receivers already saw: a gap, reason
// `position_rewound`, from where the server's WAL now ends to the highest position processed.

/** Where the server stands: its identity (null when this role may not read pg_control) and WAL position. */
export interface ServerPosition {
  systemId: string | null;
  timeline: number | null;
  lsn: Lsn;
}

interface Mark {
  systemId: string | null;
  timeline: number | null;
  lsn: Lsn;
}

export async function readServerPosition(db: Queryable): Promise<ServerPosition> {
  const { rows } = await db.query<{ lsn: string }>('SELECT pg_current_wal_lsn()::text AS lsn');
  const identity = await db
    .query<{ system_id: string; timeline: number }>(
      `SELECT (SELECT system_identifier::text FROM pg_control_system()) AS system_id,
              (SELECT timeline_id FROM pg_control_checkpoint()) AS timeline`,
    )
    .then((r) => r.rows[0])
    .catch(() => undefined);
  return { systemId: identity?.system_id ?? null, timeline: identity?.timeline ?? null, lsn: parseLsn(rows[0]!.lsn) };
}

/** The highest position processed, in memory and (optionally) in a file. */
export class ProcessedHighWater {
  #mark: Mark | null = null;
  #written = '';
  /** Writes one after another: the status timer and a new session may both write. */
  #writing: Promise<void> = Promise.resolve();

  constructor(private readonly file: string | undefined) {}

  /** Reads the file of an earlier run, if there is one. */
  async load(log: Logger): Promise<void> {
    if (!this.file || this.#mark) return;
    const text = await readFile(this.file, 'utf8').catch((err: NodeJS.ErrnoException) => {
      if (err.code !== 'ENOENT') log.warn({ err, file: this.file }, 'could not read the tailer state file');
      return undefined;
    });
    if (!text) return;
    try {
      const saved = JSON.parse(text) as { systemId: string | null; timeline: number | null; lsn: string };
      this.#mark = { systemId: saved.systemId, timeline: saved.timeline, lsn: parseLsn(saved.lsn) };
      this.#written = text;
    } catch (err) {
      log.warn({ err, file: this.file }, 'the tailer state file is not valid: ignored');
    }
  }

  /** A position processed (never moves the mark back). */
  advance(lsn: Lsn): void {
    if (this.#mark && lsn > this.#mark.lsn) this.#mark.lsn = lsn;
  }

  /**
   * Compares the server with the mark and adopts the server's identity. Returns the highest
   * position processed when the server's WAL now ends before it (rewound), else undefined. Another
   * cluster (a different system identifier) has positions of its own: nothing to compare.
   */
  rewoundTo(server: ServerPosition): Lsn | undefined {
    const mark = this.#mark;
    const sameCluster = !mark || !mark.systemId || !server.systemId || mark.systemId === server.systemId;
    const rewound = mark && sameCluster && server.lsn < mark.lsn ? mark.lsn : undefined;
    this.#mark = {
      systemId: server.systemId,
      timeline: server.timeline,
      lsn: mark && sameCluster && rewound === undefined ? mark.lsn : server.lsn,
    };
    return rewound;
  }

  /** Writes the mark to the file when it changed (write and rename: never a half-written file). */
  persist(): Promise<void> {
    const file = this.file;
    if (!file || !this.#mark) return this.#writing;
    const text = JSON.stringify({ systemId: this.#mark.systemId, timeline: this.#mark.timeline, lsn: formatLsn(this.#mark.lsn) });
    const write = this.#writing.then(async () => {
      if (text === this.#written) return;
      await writeFile(`${file}.tmp`, text);
      await rename(`${file}.tmp`, file);
      this.#written = text;
    });
    this.#writing = write.catch(() => undefined);
    return write;
  }
}

/**
 * Records the rewind as a gap per project environment, naming the subscriptions active at the
 * (restored) saved position. Not twice for the same rewind (a crash before the file was written).
 */
export async function recordRewind(db: Queryable, slotName: string, server: ServerPosition, processed: Lsn, log: Logger): Promise<void> {
  const toLsn = formatLsn(processed);
  const { rows } = await db.query<{ now: Date; recorded: boolean }>(
    `SELECT now() AS now, EXISTS (SELECT 1 FROM walgate.capture_gaps
        WHERE slot_name = $1 AND reason = 'position_rewound' AND to_lsn = $2::pg_lsn) AS recorded`,
    [slotName, toLsn],
  );
  if (rows[0]!.recorded) return;
  const saved = await readPosition(db, slotName);
  const affected = saved ? await activeAt(db, saved) : (await currentSubscriptions(db)).filter((s) => s.active);
  const gap = {
    slotName,
    reason: 'position_rewound' as const,
    fromLsn: formatLsn(server.lsn),
    toLsn,
    fromTime: null,
    toTime: rows[0]!.now,
  };
  const ids = await recordTenantGaps(db, { ...gap, affected });
  log.error(
    { ...gap, gaps: ids, subscriptions: affected.length, systemId: server.systemId, timeline: server.timeline },
    'the server WAL position is behind what was already processed (a restore or a failover to a standby that was behind): ' +
      'changes delivered in the gap are gone from the database, and new changes there may reuse their event ids',
  );
}
