#!/usr/bin/env bash
# device16_w3 on the lent machine, one command from the repository root (carry: [".dev16"]):
#   OUT=... bash traces/record/new_workloads16.sh [rig options, e.g. --events 2000 --rounds 1]
# Unpacks .dev16/w3.tar.xz into $W3_WORK (default .dev16/run; never into /), then
# new_workloads16_rig.py records the two workloads on a durable primary and times relay_replay.py
# on them; $OUT gets log.txt, results.tar.gz and one NAME.binlog.tar per recording.
set -uo pipefail
: "${OUT:?set OUT to the folder that comes back}"
# on the disk under test (device16 ran in the repository, on /dev/vda; /tmp may be a tmpfs)
WORK=${W3_WORK:-$(pwd)/.dev16/run}
PY=${W3_PYTHON:-python3}
mkdir -p "$OUT"
exec > >(tee -a "$OUT/log.txt") 2>&1
echo "[$(date -u +%H:%M:%S)] new_workloads16: start on $(hostname), $(nproc) CPUs," \
     "$($PY --version 2>&1)"
[ -f .dev16/w3.tar.xz ] || {
  echo "new_workloads16: .dev16/w3.tar.xz missing (make device16-w3-bundle; carry .dev16)"; exit 2; }
if [ -e "$WORK" ]; then   # the default is this script's own folder: a stale one goes
  [ -z "${W3_WORK:-}" ] || {
    echo "new_workloads16: $WORK exists; remove it or set another W3_WORK"; exit 2; }
  rm -rf "$WORK"
fi
mkdir -p "$WORK"
$PY -c "import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])" \
  .dev16/w3.tar.xz "$WORK" || { echo "new_workloads16: cannot unpack .dev16/w3.tar.xz"; exit 2; }
echo "[$(date -u +%H:%M:%S)] bundle unpacked into $WORK"
$PY traces/record/new_workloads16_rig.py --bundle "$WORK/w3" --work "$WORK" --out "$OUT" "$@"
rc=$?
echo "[$(date -u +%H:%M:%S)] new_workloads16: exit $rc"
exit $rc
