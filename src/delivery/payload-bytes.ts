import type { CapturedEvent } from '../tailer/sink.js';

// What a held delivery costs in memory, for the stream's byte budget (TAILER_MAX_HELD_BYTES):
// about the size of its body, which carries the row twice (record, data) and the old row once.

const sizes = new WeakMap<CapturedEvent, number>();

/** Roughly the bytes of one delivery of the event (its body), remembered per event. */
export function payloadBytes(event: CapturedEvent): number {
  let n = sizes.get(event);
  if (n === undefined) {
    let row = 0;
    for (let i = 0; i < event.columns.length; i++) row += event.columns[i]!.length + (event.record[i]?.length ?? 0) + 4;
    let old = 0;
    if (event.old) for (let i = 0; i < event.columns.length; i++) old += event.columns[i]!.length + (event.old[i]?.length ?? 0) + 4;
    n = 256 + 2 * row + old;
    sizes.set(event, n);
  }
  return n;
}

/**
 * The deliveries a stream holds in memory (waiting, in flight, being recorded), counted and
 * weighed: reading waits when either cap is reached — 1 MB rows fill memory long before 10,000
 * deliveries do. One delivery larger than the byte budget still goes, alone.
 */
export class HeldDeliveries {
  #count = 0;
  #bytes = 0;
  constructor(
    readonly maxCount: number,
    readonly maxBytes: number,
  ) {}

  add(event: CapturedEvent): void {
    this.#count++;
    this.#bytes += payloadBytes(event);
  }

  remove(event: CapturedEvent): void {
    this.#count--;
    this.#bytes -= payloadBytes(event);
  }

  /**
   * A batch's request body while it is in flight (batch.ts): a copy of its members' bodies on top
   * of what they weigh, which counts against the budget too — reading waits while it is out.
   */
  addBody(bytes: number): void {
    this.#bytes += bytes;
  }

  removeBody(bytes: number): void {
    this.#bytes -= bytes;
  }

  get bytes(): number {
    return this.#bytes;
  }

  get room(): boolean {
    return this.#count < this.maxCount && this.#bytes < this.maxBytes;
  }

  /** The count, or its equivalent in bytes when those are nearer their cap (spill.ts weighs memory by it). */
  get pressure(): number {
    return Math.max(this.#count, (this.#bytes / this.maxBytes) * this.maxCount);
  }
}
