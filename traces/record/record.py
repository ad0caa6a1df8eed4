#!/usr/bin/env python3
"""Record a commitsched trace from a private MariaDB running a sysbench workload.

    python traces/record/record.py --workload oltp_read_write --threads 8 --time 20 \
        -o traces/recorded/oltp_rw_t8.jsonl.gz

Starts its own mariadbd (own datadir, socket, port; bound to 127.0.0.1 only; never the system
service), prepares the sysbench tables, rotates the binlog, runs the workload, rotates again, and
imports exactly the binlog files written during the run. The trace header carries the provenance:
server version and settings, the sysbench command, threads, transaction count, TPS and the
server's own binlog_commits / binlog_group_commits deltas. The server is always shut down.
"""
from __future__ import annotations

import argparse
import atexit
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, REPO)  # run from a checkout without installing


def _import_importers():
    try:
        from commitsched.importers import import_binlog  # installed (editable) package
    except ImportError:  # plain checkout: the package maps onto model/
        import importlib.util
        spec = importlib.util.spec_from_file_location(
            "commitsched", os.path.join(REPO, "model", "__init__.py"),
            submodule_search_locations=[os.path.join(REPO, "model")])
        mod = importlib.util.module_from_spec(spec)
        sys.modules["commitsched"] = mod
        spec.loader.exec_module(mod)
        from commitsched.importers import import_binlog
    return import_binlog


# A machine without MariaDB installed (a lent machine: traces/record/lag_check_device.sh) runs
# the servers from a bundle. COMMITSCHED_TOOLS_DIR: the only folder tools are looked up in
# (nothing from the system, so a dry run here proves the bundle complete).
# COMMITSCHED_DATADIR_TEMPLATE: a datadir made by mariadb-install-db, copied instead of running
# it (the script needs the server's whole share folder). COMMITSCHED_SERVER_SHARE: the server's
# messages (english/errmsg.sys) and charsets/, where its compiled-in /usr/share/mariadb is
# missing. COMMITSCHED_SERVER_USER: the OS user the servers run as (no `mysql` user there).
TOOLS_DIR_ENV, TEMPLATE_ENV = "COMMITSCHED_TOOLS_DIR", "COMMITSCHED_DATADIR_TEMPLATE"
SHARE_ENV, SERVER_USER_ENV = "COMMITSCHED_SERVER_SHARE", "COMMITSCHED_SERVER_USER"


def share_args() -> list[str]:
    """mariadbd's options for a bundled share folder (none without COMMITSCHED_SERVER_SHARE)."""
    share = os.environ.get(SHARE_ENV)
    return ([f"--lc-messages-dir={share}", f"--character-sets-dir={share}/charsets"]
            if share else [])


def which(*names: str) -> str | None:
    only = os.environ.get(TOOLS_DIR_ENV)
    for n in names:
        if only:
            p = os.path.join(only, n)
            if os.path.isfile(p) and os.access(p, os.X_OK):
                return p
            continue
        p = shutil.which(n) or (os.path.exists(f"/usr/sbin/{n}") and f"/usr/sbin/{n}") or None
        if p:
            return p
    return None


TOOLS = {
    "server": ("mariadbd", "mysqld"),
    "install_db": ("mariadb-install-db", "mysql_install_db"),
    "client": ("mariadb", "mysql"),
    "admin": ("mariadb-admin", "mysqladmin"),
    "dump": ("mariadb-dump", "mysqldump"),
    "binlog": ("mariadb-binlog", "mysqlbinlog"),
    "sysbench": ("sysbench",),
}


def find_tools() -> dict[str, str]:
    found, missing = {}, []
    template = os.environ.get(TEMPLATE_ENV)
    if template and not os.path.isdir(os.path.join(template, "mysql")):
        raise SystemExit(f"record: {TEMPLATE_ENV}={template}: not a datadir made by "
                         "mariadb-install-db (no mysql/ folder in it)")
    for role, names in TOOLS.items():
        if role == "install_db" and template:
            found[role] = None                   # CalibServer.install copies the template
            continue
        p = which(*names)
        if p is None:
            missing.append("/".join(names))
        found[role] = p
    if missing:
        where = os.environ.get(TOOLS_DIR_ENV)
        raise SystemExit("record: missing " + ", ".join(missing) +
                         (f" in {TOOLS_DIR_ENV}={where}" if where else
                          "\n  install them with: apt-get update && apt-get install -y "
                          "mariadb-server sysbench"))
    return found


def server_user() -> str | None:
    """The OS user the servers run as: COMMITSCHED_SERVER_USER (a lent machine has no `mysql`
    user; `root` there), else `mysql` when this process is root, else this process's user."""
    return os.environ.get(SERVER_USER_ENV) or ("mysql" if os.geteuid() == 0 else None)


def install_datadir(tools: dict, datadir: str, args: list[str]) -> subprocess.CompletedProcess:
    """A fresh datadir: mariadb-install-db with `args`, or a copy of COMMITSCHED_DATADIR_TEMPLATE
    (find_tools has checked it) owned by the server's user. The result's returncode and stdout
    say how it went, as install_db's do."""
    template = os.environ.get(TEMPLATE_ENV)
    if not template:
        return subprocess.run([tools["install_db"], "--no-defaults", f"--datadir={datadir}",
                               "--auth-root-authentication-method=normal", "--skip-test-db",
                               *args], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        shutil.copytree(template, datadir, symlinks=True, dirs_exist_ok=True)
    except OSError as e:
        return subprocess.CompletedProcess([], 1, f"copying {template}: {e}\n")
    user = server_user()
    if user:
        r = subprocess.run(["chown", "-R", f"{user}:{user}", datadir], capture_output=True,
                           text=True)
        if r.returncode != 0:
            return subprocess.CompletedProcess([], 1, r.stdout + r.stderr)
    return subprocess.CompletedProcess([], 0, "")


def private_tmpdir(workdir: str, user: str | None) -> str:
    """`workdir/tmp`, made and owned by the server's user: the folder every server here, and its
    mariadb-install-db, is given as `--tmpdir`. Each one deletes every `#sql*` file in its tmpdir
    when it starts (checked by hand on 10.11), so servers sharing /tmp delete each other's temporary
    tables: a test's install_db failed with "Error on delete of '/tmp/#sql-temptable-...'" when
    another test's server started beside it."""
    path = os.path.join(workdir, "tmp")
    os.makedirs(path, exist_ok=True)
    if user:
        shutil.chown(path, user, user)
    return path


def free_port(preferred: int) -> int:
    """`preferred` if a server can listen there, else the first such port of 33100-33399.
    The probe binds as mariadbd does, with SO_REUSEADDR: a port whose last connections are in
    TIME_WAIT is free for the server, and without the option the probe took it for busy and
    fell back outside the caller's port range."""
    for port in [preferred] + list(range(33100, 33400)):
        with socket.socket() as s:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                s.bind(("127.0.0.1", port))
                return port
            except OSError:
                continue
    raise SystemExit("record: no free port on 127.0.0.1 in 33100-33399")


class Server:
    """A private mariadbd on 127.0.0.1 with its own datadir; stopped by stop() or at exit."""

    def __init__(self, tools: dict, workdir: str, port: int, settings: dict[str, str]):
        self.tools, self.workdir, self.port, self.settings = tools, workdir, port, settings
        self.datadir = os.path.join(workdir, "data")
        self.sock = os.path.join(workdir, "mysqld.sock")
        self.proc: subprocess.Popen | None = None
        self.user = server_user()

    def start(self) -> None:
        os.makedirs(self.datadir, exist_ok=True)
        owner = []
        if self.user:
            shutil.chown(self.workdir, self.user, self.user)
            shutil.chown(self.datadir, self.user, self.user)
            owner = [f"--user={self.user}"]
        tmp = f"--tmpdir={private_tmpdir(self.workdir, self.user)}"
        r = install_datadir(self.tools, self.datadir, [*owner, tmp])
        if r.returncode != 0:
            hint = (f"\n  (the server runs as '{self.user}': every parent of {self.workdir} must "
                    "be reachable by that user)" if self.user else "")
            raise SystemExit(f"record: {os.path.basename(self.tools['install_db'] or 'the datadir')} failed:\n"
                             + r.stdout[-1500:] + hint)
        args = [self.tools["server"], "--no-defaults", f"--datadir={self.datadir}",
                f"--socket={self.sock}", f"--port={self.port}", "--bind-address=127.0.0.1",
                f"--pid-file={os.path.join(self.workdir, 'mysqld.pid')}",
                f"--log-error={os.path.join(self.workdir, 'error.log')}",
                "--skip-name-resolve", *owner, tmp, *share_args()]
        args += [f"--{k.replace('_', '-')}={v}" for k, v in self.settings.items()]
        self.proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                     start_new_session=True)
        deadline = time.time() + 60
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise SystemExit("record: mariadbd exited at start; see " +
                                 os.path.join(self.workdir, "error.log") + "\n" + self.error_tail())
            r = subprocess.run([self.tools["admin"], "--no-defaults", f"--socket={self.sock}",
                                "-uroot", "ping"], capture_output=True)
            if r.returncode == 0:
                return
            time.sleep(0.3)
        raise SystemExit("record: mariadbd did not answer within 60 s\n" + self.error_tail())

    def error_tail(self) -> str:
        try:
            with open(os.path.join(self.workdir, "error.log")) as f:
                return "".join(f.readlines()[-15:])
        except OSError:
            return ""

    def sql(self, query: str) -> list[list[str]]:
        r = subprocess.run([self.tools["client"], "--no-defaults", f"--socket={self.sock}",
                            "-uroot", "-N", "-B", "-e", query], capture_output=True, text=True)
        if r.returncode != 0:
            raise SystemExit(f"record: SQL failed: {query}\n{r.stderr}")
        return [line.split("\t") for line in r.stdout.splitlines()]

    def status(self, *names: str) -> dict[str, int]:
        rows = self.sql("SHOW GLOBAL STATUS WHERE Variable_name IN (%s)" %
                        ",".join(f"'{n}'" for n in names))
        return {k.lower(): int(v) for k, v in rows}

    def stop(self) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        subprocess.run([self.tools["admin"], "--no-defaults", f"--socket={self.sock}", "-uroot",
                        "shutdown"], capture_output=True, timeout=60)
        try:
            self.proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait()


def _rerecord_args(args: list[str]) -> list[str]:
    """The command line without the options that only say where local files went."""
    out, skip = [], False
    for x in args:
        if skip:
            skip = False
            continue
        name = x.split("=", 1)[0]
        if name in ("--keep-binlogs", "--workdir", "--port"):
            skip = "=" not in x
            continue
        if name == "--keep":
            continue
        out.append(x)
    return out


def sysbench_cmd(tools, a, port: int, action: str) -> list[str]:
    script = a.workload
    if not script.endswith(".lua") and os.path.exists(os.path.join(HERE, script + ".lua")):
        script = os.path.join(HERE, script + ".lua")
    cmd = [tools["sysbench"], script, "--db-driver=mysql", "--mysql-host=127.0.0.1",
           f"--mysql-port={port}", "--mysql-user=sbtest", "--mysql-password=sbtest",
           "--mysql-db=sbtest", f"--tables={a.tables}", f"--table-size={a.table_size}",
           f"--rand-seed={a.seed}"]
    if action == "run":
        cmd += [f"--threads={a.threads}", f"--time={a.time}", f"--events={a.events}",
                "--report-interval=0"]
    cmd += list(a.sysbench_arg)
    return cmd + [action]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--workload", default="oltp_read_write",
                   help="sysbench script: a bundled one (oltp_read_write, oltp_update_index, "
                        "oltp_insert, ...) or one of traces/record/*.lua (ddl_mix, fk_parent)")
    p.add_argument("--threads", type=int, default=8)
    p.add_argument("--time", type=int, default=10, help="seconds to run (0: until --events)")
    p.add_argument("--events", type=int, default=0, help="stop after this many events (0: no limit)")
    p.add_argument("--tables", type=int, default=4)
    p.add_argument("--table-size", type=int, default=10000)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--commit-wait-count", type=int, default=0, help="binlog_commit_wait_count")
    p.add_argument("--commit-wait-usec", type=int, default=100000, help="binlog_commit_wait_usec")
    p.add_argument("--no-sync", dest="sync", action="store_false",
                   help="sync_binlog=0, innodb_flush_log_at_trx_commit=2 (default: 1/1, durable "
                        "as in production; the fsync is what makes commits group)")
    p.add_argument("--max-binlog-size", type=int, default=1 << 30,
                   help="rotate the binlog at this size (bytes, >= 4096): several files")
    p.add_argument("--port", type=int, default=33107)
    p.add_argument("--workdir", help="server directory (default: a fresh one under /tmp, removed)")
    p.add_argument("--keep", action="store_true", help="keep the server directory")
    p.add_argument("--keep-binlogs", help="copy the workload's binlog files into this folder")
    p.add_argument("--sysbench-arg", action="append", default=[], metavar="ARG",
                   help="extra sysbench option, e.g. --sysbench-arg=--range_selects=off")
    p.add_argument("-o", "--output", required=True, help="trace to write (.jsonl or .jsonl.gz)")
    a = p.parse_args(argv)

    tools = find_tools()
    import_binlog = _import_importers()
    port = free_port(a.port)
    own_dir = a.workdir is None
    workdir = a.workdir or tempfile.mkdtemp(prefix="commitsched-record-")
    os.makedirs(workdir, exist_ok=True)
    os.chmod(workdir, 0o755)
    settings = {
        "server_id": "1", "log_bin": os.path.join(workdir, "data", "binlog"),
        "binlog_format": "ROW", "binlog_row_image": "FULL", "binlog_row_metadata": "FULL",
        "max_binlog_size": str(a.max_binlog_size),
        "sync_binlog": "1" if a.sync else "0",
        "innodb_flush_log_at_trx_commit": "1" if a.sync else "2",
        "innodb_buffer_pool_size": "268435456", "max_connections": str(max(200, a.threads + 20)),
        "binlog_commit_wait_count": str(a.commit_wait_count),
        "binlog_commit_wait_usec": str(a.commit_wait_usec),
    }
    server = Server(tools, workdir, port, settings)

    def cleanup(*_):
        server.stop()
        if own_dir and not a.keep:
            shutil.rmtree(workdir, ignore_errors=True)
    atexit.register(cleanup)
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda s, f: sys.exit(128 + s))

    log = lambda msg: print(f"record: {msg}", file=sys.stderr, flush=True)
    log(f"starting mariadbd on 127.0.0.1:{port}, datadir {server.datadir}")
    server.start()
    version = server.sql("SELECT VERSION()")[0][0]
    server.sql("CREATE DATABASE sbtest; CREATE USER 'sbtest'@'127.0.0.1' IDENTIFIED BY 'sbtest';"
               "GRANT ALL ON sbtest.* TO 'sbtest'@'127.0.0.1'")
    log("sysbench prepare")
    prep = subprocess.run(sysbench_cmd(tools, a, port, "prepare"), capture_output=True, text=True)
    if prep.returncode != 0:
        raise SystemExit("record: sysbench prepare failed\n" + prep.stdout + prep.stderr)
    schema_sql = os.path.join(workdir, "schema.sql")
    with open(schema_sql, "w") as f:
        subprocess.run([tools["dump"], "--no-defaults", f"--socket={server.sock}", "-uroot",
                        "--no-data", "--databases", "sbtest"], stdout=f, check=True)

    server.sql("FLUSH BINARY LOGS")
    first = server.sql("SHOW MASTER STATUS")[0][0]
    counters = ("Binlog_commits", "Binlog_group_commits", "Binlog_group_commit_trigger_count",
                "Binlog_group_commit_trigger_timeout", "Binlog_group_commit_trigger_lock_wait")
    before = server.status(*counters)
    run_cmd = sysbench_cmd(tools, a, port, "run")
    log("sysbench run: " + " ".join(os.path.basename(run_cmd[0]) if i == 0 else x
                                    for i, x in enumerate(run_cmd)))
    t0 = time.time()
    run = subprocess.run(run_cmd, capture_output=True, text=True)
    wall = time.time() - t0
    if run.returncode != 0:
        raise SystemExit("record: sysbench run failed\n" + run.stdout + run.stderr)
    after = server.status(*counters)
    server.sql("FLUSH BINARY LOGS")
    names = [r[0] for r in server.sql("SHOW BINARY LOGS")]
    files = [n for n in names if first <= n][:-1]  # the run's files; the last one is the new empty one
    paths = [os.path.join(server.datadir, n) for n in files]

    m = re.search(r"transactions:\s+(\d+)\s+\(([\d.]+) per sec", run.stdout)
    sb_txns, sb_tps = (int(m.group(1)), float(m.group(2))) if m else (None, None)
    delta = {k: after[k] - before[k] for k in after}
    source = {
        "server": "MariaDB", "version": version,
        "recorded_by": "traces/record/record.py",
        "settings": {k: v for k, v in settings.items() if k != "log_bin"},
        "workload": os.path.basename(a.workload),
        "sysbench_command": "sysbench " + " ".join(
            x for x in run_cmd[1:] if not x.startswith(("--mysql-password", "--mysql-port"))),
        "client_threads": a.threads,
        "sysbench_transactions": sb_txns, "sysbench_tps": sb_tps,
        "wall_seconds": round(wall, 2),
        "binlog_files": files,
        **{k: v for k, v in delta.items()},
        "mean_group_size_server": (round(delta["binlog_commits"] / delta["binlog_group_commits"], 4)
                                   if delta["binlog_group_commits"] else None),
        "time_unit": "s (timestamp: binlog event time, 1 s resolution)",
        "rerecord": "python traces/record/record.py " + " ".join(_rerecord_args(
            argv if argv is not None else sys.argv[1:])),
    }
    if a.keep_binlogs:
        os.makedirs(a.keep_binlogs, exist_ok=True)
        for pth in paths + [schema_sql]:
            shutil.copy(pth, a.keep_binlogs)
    server.stop()
    log(f"importing {len(files)} binlog file(s): {', '.join(files)}")
    stats = import_binlog(paths, a.output, schema=schema_sql, source=source,
                          binlog_tool=tools["binlog"])
    log(f"wrote {a.output}: {stats.transactions} transactions, "
        f"{stats.groups} commit groups (server: {delta['binlog_commits']} commits, "
        f"{delta['binlog_group_commits']} group commits)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
