"""Where the tests find the real MySQL data that is not committed (third-party binlogs and
printer text): `shared/` beside the repository (shared/README.md), which CI and every developer
have. A missing file fails the test that needs it, naming where it was looked for: CI runs every
real-MySQL test, none is skipped for want of its file.

The folder is, in order: the environment variable the caller names (e.g.
$COMMITSCHED_MYSQL_BINLOGS), `../shared/<folder>` beside the repository (a clone's layout, as CI
has it), and, from a git worktree, `shared/<folder>` beside the main checkout the worktree
belongs to (a worktree elsewhere has no `../shared` of its own).
"""
from __future__ import annotations

import hashlib
import os
import subprocess

import pytest

ROOT = os.path.normpath(os.path.join(os.path.dirname(__file__), ".."))


def _main_checkout() -> str | None:
    """The main checkout of the repository this worktree belongs to, or None."""
    try:
        common = subprocess.run(["git", "rev-parse", "--path-format=absolute", "--git-common-dir"],
                                cwd=ROOT, capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    path = common.stdout.strip()
    if common.returncode != 0 or not path:
        return None
    return os.path.dirname(os.path.normpath(path))


def shared_dir(folder: str, env: str) -> str:
    """The folder of shared data named `folder` (e.g. "mysql_binlogs")."""
    if os.environ.get(env):
        return os.environ[env]
    beside = os.path.join(os.path.dirname(ROOT), "shared", folder)
    if os.path.isdir(beside):
        return beside
    main = _main_checkout()
    if main is not None:
        of_main = os.path.join(os.path.dirname(main), "shared", folder)
        if os.path.isdir(of_main):
            return of_main
    return beside


def shared_file(folder: str, env: str, name: str, sha256: str) -> str:
    """The path of one shared file, checked against its manifest's sha256; a missing file fails
    the test (it is not skipped)."""
    where = shared_dir(folder, env)
    path = os.path.join(where, name)
    if not os.path.exists(path):
        pytest.fail(f"{name} is not in {where}: real MySQL data kept beside the repository in "
                    f"shared/{folder}/ (its manifest in tests/fixtures/binlog/ says where it comes "
                    f"from); set ${env} to the folder that holds it")
    with open(path, "rb") as f:
        assert hashlib.sha256(f.read()).hexdigest() == sha256, \
            f"{path} is not the file the manifest describes"
    return path
