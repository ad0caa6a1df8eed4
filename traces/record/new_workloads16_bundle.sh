#!/usr/bin/env bash
# device16_w3's bundle: what a bare lent machine (no MariaDB, no sysbench, no pymysql, no
# network) needs to record new workloads and replay them (traces/record/new_workloads16.sh).
# Writes .dev16/w3.tar.xz (carried with `run`'s carry: [".dev16"]) and prints its size.
#   bash traces/record/new_workloads16_bundle.sh        (make device16-w3-bundle)
# Needs this machine's Debian 12 mariadbd, mariadb-install-db, sysbench, pip (network for the
# pymysql wheel) and ../shared/replica16/recordings/sbtest_schema.sql.
set -euo pipefail
cd "$(dirname "$0")/../.."
# shellcheck source=bundle_libs.sh
. traces/record/bundle_libs.sh
OUTDIR=.dev16
SCHEMA=${SCHEMA:-../shared/replica16/recordings/sbtest_schema.sql}
STAGE=$(mktemp -d /tmp/dev16w3.XXXXXX)
trap 'rm -rf "$STAGE"' EXIT
B=$STAGE/w3
mkdir -p "$B"/{bin,lib,share,sysbench,wheels}
die() { echo "new_workloads16_bundle: $*" >&2; exit 1; }
for t in mariadbd mariadb-install-db sysbench strip; do
  command -v "$t" >/dev/null || [ -x "/usr/sbin/$t" ] || die "$t not found"
done
[ -f "$SCHEMA" ] || die "$SCHEMA: missing (replica16's sbtest schema)"
MARIADBD=$(command -v mariadbd || echo /usr/sbin/mariadbd)
SYSBENCH=$(command -v sysbench)

# the binaries, stripped copies
strip --strip-unneeded -o "$B/bin/mariadbd" "$MARIADBD"
strip --strip-unneeded -o "$B/bin/sysbench" "$SYSBENCH"
# the binaries' libraries but glibc's (bundle_libs.sh)
bundle_libs "$B/lib" "$MARIADBD" "$SYSBENCH"
# the server's messages and character sets (relay_replay's --share)
cp -r /usr/share/mysql/english /usr/share/mysql/charsets "$B/share/"
cp /usr/share/sysbench/*.lua "$B/sysbench/"
cp "$SCHEMA" "$B/sbtest_schema.sql"
# a datadir made by mariadb-install-db (a bare machine cannot run that script); root with no
# password (normal authentication) so pymysql and sysbench connect on the socket
mariadb-install-db --no-defaults --datadir="$STAGE/data" --auth-root-authentication-method=normal \
  --skip-test-db --user=root >"$STAGE/install.log" 2>&1 || { cat "$STAGE/install.log"; die "mariadb-install-db failed"; }
tar -C "$STAGE" -cJf "$B/datadir.tar.xz" data
# pymysql, pure Python (installed on the machine with pip --target, no network)
python3 -m pip download -q --no-deps --only-binary=:all: -d "$B/wheels" pymysql \
  || die "pip download pymysql failed"
"$MARIADBD" --version >"$B/versions.txt"
"$SYSBENCH" --version >>"$B/versions.txt"
mkdir -p "$OUTDIR"
tar -C "$STAGE" -cJf "$OUTDIR/w3.tar.xz.tmp" w3
mv "$OUTDIR/w3.tar.xz.tmp" "$OUTDIR/w3.tar.xz"
echo "bundle: $OUTDIR/w3.tar.xz $(du -b "$OUTDIR/w3.tar.xz" | cut -f1) bytes ($(du -sb "$B" | cut -f1) unpacked)"
