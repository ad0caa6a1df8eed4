#!/usr/bin/env bash
# A lag-check campaign on a lent machine, one command from the repository root (docs/lag-check.md,
# "A campaign on a lent machine"; carry: [".dev16/lagcheck.tar.xz"]):
#   OUT=... bash traces/record/lag_check_device.sh traces/calibration/lag_check_q16 [measure options]
# Unpacks the bundle (make lag-check-device-bundle) into $LAGCHECK_WORK (default
# .dev16/lagcheck-run: on the disk under test; /tmp may be a tmpfs), installs its wheels there,
# checks that the tools and modules load, then runs `lag_check.py measure` on the campaign's
# runs.txt with campaign F's rig settings, `--pin auto` and a deadline that leaves time to pack.
# $OUT gets log.txt and campaign.tar (split into campaign.tar.part-NN above 15 MiB): the
# campaign's setup.json, runs/ and skipped.json, for `make lag-check-device-unpack` here.
set -uo pipefail
: "${OUT:?set OUT to the folder that comes back}"
CAMPAIGN=${1:?usage: OUT=DIR bash traces/record/lag_check_device.sh CAMPAIGN_DIR [options]}
shift
NAME=$(basename "$CAMPAIGN")
WORK=${LAGCHECK_WORK:-$(pwd)/.dev16/lagcheck-run}
PY=${LAGCHECK_PYTHON:-python3}
# the rig starts no run that would end later than this (s); what is left of the call's limit
# packs and sends the results (a call is killed at its limit, and every run with it)
DEADLINE=${LAGCHECK_DEADLINE_S:-530}
BUNDLE=.dev16/lagcheck.tar.xz
mkdir -p "$OUT"
exec > >(tee -a "$OUT/log.txt") 2>&1
say() { echo "[$(date -u +%H:%M:%S)] lag_check_device: $*"; }
die() { say "$*"; exit 2; }
say "start on $(hostname), $(nproc) CPUs, kernel $(uname -r), $($PY --version 2>&1)"
# the machine, for the record: CPU model, memory, the disk under test
say "$(grep -m1 'model name' /proc/cpuinfo 2>/dev/null), $(grep -m1 MemTotal /proc/meminfo 2>/dev/null)"
say "disk: $(df -hT . 2>/dev/null | tail -1)"
[ -f "$CAMPAIGN/runs.txt" ] || die "$CAMPAIGN/runs.txt missing"
[ -f "$BUNDLE" ] || die "$BUNDLE missing (make lag-check-device-bundle; carry it)"
if [ -e "$WORK" ]; then   # only the default, this script's own folder, is removed when stale
  [ -z "${LAGCHECK_WORK:-}" ] || die "$WORK exists; remove it or set another LAGCHECK_WORK"
  rm -rf "$WORK"
fi
mkdir -p "$WORK" || die "cannot make $WORK"
$PY -c "import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])" \
  "$BUNDLE" "$WORK" || die "cannot unpack $BUNDLE"
B=$WORK/lagcheck
# each tool through a wrapper that gives it the bundle's libraries, so that python3 keeps the
# machine's own (an exec: the wrapper's pid is the program's, which the rig pins)
mkdir -p "$WORK/tools"
for t in "$B"/bin/*; do
  n=$(basename "$t")
  printf '#!/bin/sh\nLD_LIBRARY_PATH=%s LUA_PATH="%s/?.lua;;" exec %s "$@"\n' \
    "$B/lib" "$B/sysbench" "$t" >"$WORK/tools/$n"
  chmod +x "$WORK/tools/$n"
done
$PY -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target "$WORK/site" \
  "$B"/wheels/*.whl || die "pip install of the bundle's wheels failed"
mkdir -p "$WORK/pkg" && ln -s "$(pwd)/model" "$WORK/pkg/commitsched"
sync    # the unpacked bundle on the disk now, not in the first run (the rig syncs again after setup)
export PYTHONPATH="$WORK/site:$WORK/pkg" PYTHONUNBUFFERED=1
export COMMITSCHED_TOOLS_DIR="$WORK/tools" COMMITSCHED_DATADIR_TEMPLATE="$B/data"
export COMMITSCHED_SERVER_USER=root COMMITSCHED_SERVER_SHARE="$B/share"
# everything loads before any server starts: a missing library costs seconds, not the call
for t in mariadbd mariadb mariadb-admin mariadb-dump mariadb-binlog sysbench; do
  "$WORK/tools/$t" --version >/dev/null 2>&1 || {
    LD_LIBRARY_PATH="$B/lib" ldd "$B/bin/$t" | grep "not found"; die "$t does not run"; }
done
$PY -c "import commitsched.cli, commitsched_simcore, commitsched_binlog, pymysql, numpy, scipy" \
  || die "commitsched's modules do not load"
say "bundle ready: $($WORK/tools/mariadbd --version), $($WORK/tools/sysbench --version)"
$PY traces/record/lag_check.py measure --out "$WORK/out/$NAME" --workdir "$WORK" \
  --replica-binlog --primary-durability relaxed --port 4301 --pin auto \
  --deadline-s "$DEADLINE" --runs "$(cat "$CAMPAIGN/runs.txt")" "$@"
rc=$?
say "measure exit $rc"
[ -d "$WORK/out/$NAME" ] || die "nothing measured"
find "$WORK/out/$NAME/runs" \( -name samples.csv -o -name window.json \) -exec gzip -9n {} +
tar -C "$WORK/out" -cf "$WORK/campaign.tar" "$NAME" || die "tar failed"
size=$(stat -c %s "$WORK/campaign.tar")
if [ "$size" -gt $((15 * 1024 * 1024)) ]; then
  split -b 15M -d "$WORK/campaign.tar" "$OUT/campaign.tar.part-"
else
  cp "$WORK/campaign.tar" "$OUT/campaign.tar"
fi
say "campaign.tar: $size bytes into $OUT ($(ls "$OUT" | tr '\n' ' '))"
exit $rc
