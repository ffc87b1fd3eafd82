import type { Logger } from '../core/log.js';
import type { Relation } from './decode.js';

/**
 * Per relation: the positions of its primary-key columns (null: no key), looked up once a
 * row-ordered subscription needs them (order-keys.ts), and forgotten when the relation is sent
 * again after DDL (the key may have changed with the columns).
 */
export class KeyColumns {
  readonly #found = new Map<number, Promise<number[] | null>>();

  constructor(
    /** A relation's primary-key columns by name (order-keys.ts primaryKeyOf). */
    private readonly primaryKey: (relationOid: number) => Promise<string[]>,
    private readonly log: Logger,
  ) {}

  of(relationOid: number, rel: Relation): Promise<number[] | null> {
    let found = this.#found.get(relationOid);
    if (!found) {
      found = this.primaryKey(relationOid).then((names) => {
        const positions = names.map((n) => rel.indexOf.get(n));
        if (names.length > 0 && positions.every((p) => p !== undefined)) return positions as number[];
        this.log.warn(
          { table: `${rel.schema}.${rel.name}` },
          'a row-ordered subscription watches a table without a primary key: its changes are delivered unordered',
        );
        return null;
      });
      this.#found.set(relationOid, found);
    }
    return found;
  }

  forget(relationOid: number): void {
    this.#found.delete(relationOid);
  }
}
