-- What a parked delivery's event weighs in memory once claimed (delivery/payload-bytes.ts), written
-- when the stream parks it: the retry queue's claim stops adding deliveries once their weight
-- reaches what the byte budget (TAILER_MAX_HELD_BYTES) leaves, so a backlog of 1 MB rows is bounded
-- in bytes, not only by count. Rows parked before this column count as 1 KiB (plus any kept body).
ALTER TABLE walgate.deliveries ADD COLUMN payload_bytes integer;
