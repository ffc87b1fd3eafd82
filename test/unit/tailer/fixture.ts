import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { parse as parseLossless } from 'lossless-json';
import type { Queryable } from '../../../src/core/db/pool.js';
import type { PgType } from '../../../src/tailer/types.js';

// The pgoutput messages captured from a real Postgres by scripts/capture-pgoutput-fixtures.ts,
// with what Postgres itself said about them (to_jsonb of each row, each column's text, xids,
// commit times, relation and type catalogs).

export interface CapturedRow {
  /** to_jsonb(row)::text */
  jsonb: string;
  /** Each column's text output, as pgoutput sends it; null for SQL NULL. */
  text: Record<string, string | null>;
}

export interface CapturedColumn {
  name: string;
  typeOid: number;
  isKey: boolean;
}

export interface CapturedRelation {
  oid: number;
  schema: string;
  name: string;
  replicaIdentity: 'full' | 'default';
  columns: CapturedColumn[];
}

export interface CapturedTransaction {
  name: string;
  sql: string;
  xid: number;
  /** pg_xact_commit_timestamp(xid), in microseconds since 1970. */
  commitTimeMicros: string;
  changes: Array<{ table: string; operation: 'INSERT' | 'UPDATE' | 'DELETE'; old: CapturedRow | null; new: CapturedRow | null }>;
  truncate: string[] | null;
  /** Every message of the transaction, with the LSN and xid logical decoding gave it. */
  messages: Array<{ lsn: string; xid: number; hex: string }>;
}

export interface PgoutputFixture {
  postgres: string;
  session: { DateStyle: string; TimeZone: string };
  relations: Record<string, CapturedRelation>;
  catalog: {
    types: PgType[];
    attributes: Record<string, Array<{ name: string; typeOid: number }>>;
  };
  transactions: CapturedTransaction[];
  /** Single values: each literal's type oid, text output and to_jsonb. */
  values: Array<{ type: string; literal: string; timeZone: string; oid: number; text: string; jsonb: string }>;
}

const FILE = fileURLToPath(new URL('../../../../test/unit/fixtures/pgoutput.json', import.meta.url));

/** A fresh copy each call, so a test may alter it without touching the others. */
export function loadPgoutputFixture(): PgoutputFixture {
  return JSON.parse(readFileSync(FILE, 'utf8')) as PgoutputFixture;
}

/**
 * Answers the type registry's catalog look-ups (pg_type by oid, pg_attribute by relation) from the
 * captured catalog, as the server it was captured from would have.
 */
export function capturedCatalog(fixture: PgoutputFixture): Queryable {
  const query = async (sql: string, params: unknown[] = []) => {
    if (/pg_attribute/.test(sql)) {
      return { rows: fixture.catalog.attributes[String(params[0])] ?? [] };
    }
    if (/pg_type/.test(sql)) {
      const wanted = new Set((params[0] as number[]).map(Number));
      return { rows: fixture.catalog.types.filter((t) => wanted.has(t.oid)) };
    }
    throw new Error(`the captured catalog cannot answer: ${sql}`);
  };
  return { query } as unknown as Queryable;
}

/**
 * JSON parsed with every number kept as its source text, to compare JSON documents the way jsonb
 * does (key order and spaces do not matter) while `1.50` and `1.5` still differ.
 */
export function exactJson(text: string): unknown {
  return parseLossless(text);
}
