import type { Change, Operation } from './events.js';
import type { Row } from './match.js';
import { UNCHANGED_TOAST, type RawTuple, type RelationMessage } from './pgoutput.js';
import type { TypeRegistry } from './types.js';
import type { Render } from './values.js';
import { kindOfRender, type ValueKind } from './filter/kinds.js';

/** A table as the stream described it last, with a renderer per column. */
export interface Relation {
  schema: string;
  name: string;
  names: string[];
  indexOf: Map<string, number>;
  renders: Render[];
  /** How filters compare each column, from its renderer (filter/kinds.ts). */
  kinds: ValueKind[];
  replicaIdentity: RelationMessage['replicaIdentity'];
  /** Some column has a type that ALTER TYPE may change (composite, or built from one): checked per transaction. */
  userTypes: boolean;
  /** The message it was described from, to describe it again when a type changed. */
  message: RelationMessage;
}

export async function describeRelation(msg: RelationMessage, types: TypeRegistry): Promise<Relation> {
  await types.resolve(msg.columns.map((c) => c.typeOid));
  const names = msg.columns.map((c) => c.name);
  const renders = msg.columns.map((c) => types.renderFor(c.typeOid));
  return {
    schema: msg.schema,
    name: msg.name,
    names,
    indexOf: new Map(names.map((n, i) => [n, i])),
    renders,
    kinds: renders.map(kindOfRender),
    replicaIdentity: msg.replicaIdentity,
    userTypes: msg.columns.some((c) => !types.isBuiltin(c.typeOid)),
    message: msg,
  };
}

export interface DecodedRow {
  row: Row;
  /** Columns whose value was not sent and could not be filled from the old row. */
  missing: string[];
}

/**
 * Renders a tuple. An unchanged TOASTed value is not in the new tuple; with REPLICA IDENTITY FULL
 * it is in the old one, so it is taken from there rather than emitted as missing.
 */
export function decodeRow(rel: Relation, tuple: RawTuple, old?: RawTuple | null): DecodedRow {
  const fragments: string[] = new Array(rel.names.length);
  const missing: string[] = [];
  for (let i = 0; i < rel.names.length; i++) {
    let raw = tuple[i];
    if (raw === UNCHANGED_TOAST) raw = old?.[i];
    if (raw === UNCHANGED_TOAST || raw === undefined) {
      missing.push(rel.names[i]!);
      fragments[i] = 'null';
    } else if (raw === null) {
      fragments[i] = 'null';
    } else {
      try {
        fragments[i] = rel.renders[i]!(raw);
      } catch {
        // A text form we could not take apart is still worth delivering, as a string.
        fragments[i] = JSON.stringify(raw);
      }
    }
  }
  return { row: { names: rel.names, fragments, indexOf: rel.indexOf, kinds: rel.kinds }, missing };
}

export function changedFields(old: Row | null, current: Row): string[] {
  // Without the old image nothing can be compared: say every column may have changed.
  if (!old) return [...current.names];
  const changed: string[] = [];
  for (let i = 0; i < current.names.length; i++) {
    if (old.fragments[i] !== current.fragments[i]) changed.push(current.names[i]!);
  }
  return changed;
}

export interface ChangeInput {
  operation: Operation;
  eventId: string;
  committedAt: Date;
  rel: Relation;
  newTuple: RawTuple | null;
  oldTuple: RawTuple | null;
  /** The old tuple holds only the key columns (replica identity DEFAULT/INDEX). */
  oldIsKeyOnly: boolean;
}

export function decodeChange(input: ChangeInput): { change: Change; missing: string[] } {
  const { rel } = input;
  const fullOld = input.oldTuple && !input.oldIsKeyOnly ? input.oldTuple : null;
  const old = fullOld ? decodeRow(rel, fullOld) : null;
  if (input.operation === 'DELETE') {
    // Without a full old image only the key is known; deliver what there is.
    const deleted = old ?? decodeRow(rel, input.oldTuple ?? []);
    return {
      change: {
        eventId: input.eventId,
        operation: 'DELETE',
        schema: rel.schema,
        table: rel.name,
        committedAt: input.committedAt,
        record: deleted.row,
        old: deleted.row,
        changedFields: [],
      },
      missing: deleted.missing,
    };
  }
  const current = decodeRow(rel, input.newTuple!, fullOld);
  return {
    change: {
      eventId: input.eventId,
      operation: input.operation,
      schema: rel.schema,
      table: rel.name,
      committedAt: input.committedAt,
      record: current.row,
      old: input.operation === 'UPDATE' ? (old?.row ?? null) : null,
      changedFields: input.operation === 'UPDATE' ? changedFields(old?.row ?? null, current.row) : [],
    },
    missing: current.missing,
  };
}
