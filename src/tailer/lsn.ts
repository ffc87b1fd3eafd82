// Log sequence numbers: Postgres writes them as `X/Y` (two 32-bit hex halves). We compare and
// store them as bigint, and name events after them.

export type Lsn = bigint;

export function parseLsn(text: string): Lsn {
  const m = /^([0-9A-Fa-f]{1,8})\/([0-9A-Fa-f]{1,8})$/.exec(text);
  if (!m) throw new Error(`not an LSN: ${text}`);
  return (BigInt(`0x${m[1]}`) << 32n) | BigInt(`0x${m[2]}`);
}

export function formatLsn(lsn: Lsn): string {
  return `${(lsn >> 32n).toString(16).toUpperCase()}/${(lsn & 0xffffffffn).toString(16).toUpperCase()}`;
}

/** 16 hex digits, zero-padded: sorts like the LSN it spells. */
export function lsnHex(lsn: Lsn): string {
  return lsn.toString(16).toUpperCase().padStart(16, '0');
}
