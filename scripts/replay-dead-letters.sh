#!/usr/bin/env bash
# Replays dead-letter webhook deliveries: a thin wrapper around `walgate deliveries replay` for
# cron jobs and runbooks. Every argument is passed on, e.g.
#   scripts/replay-dead-letters.sh --webhook wh_… --since 2026-11-01T00:00:00Z --dry-run
# It uses DATABASE_URL (or the embedded cluster under DATA_DIR) like the daemons.
set -euo pipefail
cd "$(dirname "$0")/.."
exec node bin/walgate.js deliveries replay "$@"
