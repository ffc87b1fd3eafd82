-- A position that went backwards: the database was restored from a backup, or a failover landed
-- on a standby that was behind, so the server's WAL ends before what the tailer had already
-- processed and delivered (src/tailer/rewind.ts). Recorded like the other gaps, with its own reason.
ALTER TABLE walgate.capture_gaps DROP CONSTRAINT capture_gaps_reason_check,
  ADD CONSTRAINT capture_gaps_reason_check CHECK (reason IN ('slot_lost', 'slot_missing', 'position_rewound'));
