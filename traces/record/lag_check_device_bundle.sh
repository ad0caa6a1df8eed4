#!/usr/bin/env bash
# The lag-check rig's bundle for a lent machine (no MariaDB, no sysbench, no commitsched
# dependencies, no network; Python 3.12 with numpy and scipy): everything
# traces/record/lag_check_device.sh needs there. Writes .dev16/lagcheck.tar.xz (carried with
# `run`'s carry: [".dev16/lagcheck.tar.xz"]) and prints its size.
#   bash traces/record/lag_check_device_bundle.sh        (make lag-check-device-bundle)
# Needs this machine's Debian 12 mariadbd and client tools, mariadb-install-db, sysbench, cargo
# (the two Rust extensions, built as abi3 wheels that any CPython >= 3.11 loads) and pip with the
# network (the other wheels, for CPython 3.12 on manylinux).
set -euo pipefail
cd "$(dirname "$0")/../.."
# shellcheck source=bundle_libs.sh
. traces/record/bundle_libs.sh
OUTDIR=.dev16
PY=${PY:-.venv/bin/python}
PYVER=${DEVICE_PYTHON_VERSION:-3.12}
STAGE=$(mktemp -d /tmp/lagcheck-bundle.XXXXXX)
trap 'rm -rf "$STAGE"' EXIT
B=$STAGE/lagcheck
mkdir -p "$B"/{bin,lib,share,sysbench,wheels}
die() { echo "lag_check_device_bundle: $*" >&2; exit 1; }
export PATH="$HOME/.cargo/bin:$PATH"
for t in mariadbd mariadb mariadb-admin mariadb-dump mariadb-binlog mariadb-install-db sysbench \
         strip cargo; do
  command -v "$t" >/dev/null || [ -x "/usr/sbin/$t" ] || die "$t not found"
done
[ -x "$PY" ] || die "$PY not found (make python-deps)"

# the binaries (stripped copies) under the names the rig looks up (traces/record/record.py)
for t in mariadbd mariadb mariadb-admin mariadb-dump mariadb-binlog sysbench; do
  src=$(command -v "$t" || echo "/usr/sbin/$t")
  strip --strip-unneeded -o "$B/bin/$t" "$src"
done
# the binaries' libraries but glibc's (bundle_libs.sh)
bundle_libs "$B/lib" "$B"/bin/*
# the server's messages and character sets (COMMITSCHED_SERVER_SHARE), sysbench's Lua tests
cp -r /usr/share/mysql/english /usr/share/mysql/charsets "$B/share/"
cp /usr/share/sysbench/*.lua "$B/sysbench/"
# a datadir made by mariadb-install-db, root's with no password (COMMITSCHED_DATADIR_TEMPLATE;
# the servers run as root there: COMMITSCHED_SERVER_USER)
# with the rig's redo log size (calibrate.BASE_SETTINGS), so that no server resizes it at start
LOG_SIZE=$("$PY" -c "import sys; sys.path.insert(0, 'traces/record'); \
from calibrate import BASE_SETTINGS; print(BASE_SETTINGS['innodb_log_file_size'])")
mariadb-install-db --no-defaults --datadir="$B/data" --auth-root-authentication-method=normal \
  --skip-test-db --user=root --innodb-log-file-size="$LOG_SIZE" >"$STAGE/install.log" 2>&1 \
  || { cat "$STAGE/install.log"; die "mariadb-install-db failed"; }
# commitsched's dependencies for CPython $PYVER (numpy and scipy are on the machine), at the
# versions this checkout's venv has; the Rust extensions as abi3 wheels
pins=$("$PY" -m pip freeze 2>/dev/null | grep -iE '^(pymysql|msgspec|isal|tzdata)==' || true)
[ "$(echo "$pins" | wc -l)" -eq 4 ] || die "the venv lacks one of pymysql msgspec isal tzdata"
# shellcheck disable=SC2086
"$PY" -m pip download -q --no-deps --only-binary=:all: --python-version "$PYVER" \
  --implementation cp --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 \
  --platform manylinux2014_x86_64 --platform any -d "$B/wheels" $pins \
  || die "pip download failed"
"$PY" -m pip wheel -q --no-deps -w "$B/wheels" ./model/simcore_rs ./model/binlog_rs \
  || die "building the Rust extensions' wheels failed"
{ /usr/sbin/mariadbd --version; sysbench --version; echo "$pins"; ls "$B/wheels"; } \
  >"$B/versions.txt"
mkdir -p "$OUTDIR"
tar -C "$STAGE" -cJf "$OUTDIR/lagcheck.tar.xz.tmp" lagcheck
mv "$OUTDIR/lagcheck.tar.xz.tmp" "$OUTDIR/lagcheck.tar.xz"
echo "bundle: $OUTDIR/lagcheck.tar.xz $(du -b "$OUTDIR/lagcheck.tar.xz" | cut -f1) bytes" \
     "($(du -sb "$B" | cut -f1) unpacked)"
