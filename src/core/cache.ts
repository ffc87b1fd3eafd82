/**
 * A small in-memory map whose entries live `ttlMs`: hot paths read settings and profiles from it
 * instead of paying a Postgres round trip per request. Concurrent misses for one key share a load.
 * Bounded: past `maxEntries` it starts over, so probes with random keys cannot grow memory.
 */
export class TtlCache<K, V> {
  readonly #entries = new Map<K, { value: Promise<V>; at: number }>();

  constructor(
    private readonly ttlMs: number,
    private readonly maxEntries = 10_000,
  ) {}

  get(key: K, load: () => Promise<V>): Promise<V> {
    const now = Date.now();
    const hit = this.#entries.get(key);
    if (hit && now - hit.at < this.ttlMs) return hit.value;
    if (this.#entries.size >= this.maxEntries) this.#entries.clear();
    const value = load();
    this.#entries.set(key, { value, at: now });
    // A failed load is not remembered: the next request tries again.
    value.catch(() => {
      if (this.#entries.get(key)?.value === value) this.#entries.delete(key);
    });
    return value;
  }

  delete(key: K): void {
    this.#entries.delete(key);
  }

  clear(): void {
    this.#entries.clear();
  }
}
