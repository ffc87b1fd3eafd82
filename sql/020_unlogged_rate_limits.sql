-- Rate-limit counters are worth nothing after a crash (they are windows of a minute or so), but
-- as a logged table every counted request paid a WAL flush at its commit and wrote WAL that the
-- tailer's slot then reads past. Unlogged: no WAL, no flush; after a crash the table starts
-- empty, which only resets the current windows. (Standbys do not see it; counters there would be
-- as stale as after a crash.)
ALTER TABLE walgate.rate_limits SET UNLOGGED;
