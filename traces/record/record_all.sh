#!/usr/bin/env bash
# Re-record every bundled trace in traces/recorded/ (about 5 minutes on 2 cores).
# One line per recording; each can be run alone (`make record WORKLOAD=...` runs one of them).
# Set KEEP_BINLOGS=DIR to also keep each run's binlog files (DIR/NAME/).
set -euo pipefail
cd "$(dirname "$0")/../.."
PY=${PYTHON:-$( [ -x .venv/bin/python ] && echo .venv/bin/python || echo python3 )}
OUT=traces/recorded
rec() {  # rec NAME ARGS...
  local name=$1; shift
  local keep=()
  [ -n "${KEEP_BINLOGS:-}" ] && keep=(--keep-binlogs "$KEEP_BINLOGS/$name")
  if [ -n "${ONLY:-}" ] && [ "$ONLY" != "$name" ]; then return 0; fi
  "$PY" traces/record/record.py "$@" "${keep[@]}" -o "$OUT/$name.jsonl.gz"
}
rec oltp_read_write_t1      --workload oltp_read_write   --threads 1   --time 50 --events 2000 --tables 4  --table-size 10000
rec oltp_read_write_t8      --workload oltp_read_write   --threads 8   --time 50 --events 3000 --tables 4  --table-size 10000
rec oltp_read_write_t64     --workload oltp_read_write   --threads 64  --time 50 --events 3000 --tables 4  --table-size 10000
rec oltp_read_write_t64_wait12 --workload oltp_read_write --threads 64 --time 50 --events 3000 --tables 4  --table-size 10000 --commit-wait-count 12 --commit-wait-usec 10000
rec oltp_update_index_t1    --workload oltp_update_index --threads 1   --time 50 --events 3000 --tables 4  --table-size 10000
rec oltp_update_index_t48   --workload oltp_update_index --threads 48  --time 50 --events 3000 --tables 4  --table-size 10000
rec oltp_insert_25tables_t100 --workload oltp_insert     --threads 100 --time 50 --events 3000 --tables 25 --table-size 1000
rec ddl_mix_t8              --workload ddl_mix           --threads 8   --time 50 --events 3000 --tables 4  --table-size 10000 --sysbench-arg=--ddl_every=100
rec fk_parent_t8            --workload fk_parent         --threads 8   --time 50 --events 3000
