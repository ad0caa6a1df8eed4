"""MariaDB's GTID event as `mariadb-binlog` prints it (10.0.5+ through 11.x).

    #261122  3:36:09 server id 1  end_log_pos 381 CRC32 0x57d42606 	GTID 0-1-10 cid=5087 trans waited
    /*M!100101 SET @@session.skip_parallel_replication=0*//*!*/;

`Gtid_log_event::print` (client/ sql/log_event_client.cc) writes `GTID d-s-n`, then ` cid=N`
when FL_GROUP_COMMIT_ID is set, ` trans` unless FL_STANDALONE, ` waited` for FL_WAITED and
` ddl` for FL_DDL (XA forms add `XA START ...`, not used here). FL_ALLOW_PARALLEL is not on the
line: the printer emits `SET @@session.skip_parallel_replication=0|1` whenever it changes, so we
carry that value from event to event as the server's replica would.
"""
from __future__ import annotations

import re

# domain and server ids are 32-bit, seq_no and commit ids 64-bit: at most 20 digits
GTID_RE = re.compile(r"^GTID (\d{1,10})-(\d{1,10})-(\d{1,20})((?: [^ ]+)*)\s*$")
SKIP_PARALLEL_RE = re.compile(r"SET @@session\.skip_parallel_replication=([01])")

# printed token -> trace flag name (model/trace.py MARIADB_FLAGS)
_TOKENS = {"trans": "transactional", "waited": "waited", "ddl": "ddl"}


def parse_gtid(body: str) -> dict | None:
    """The fields of a MariaDB GTID event body, or None when `body` is not one. Raises
    ValueError on a GTID line with tokens we do not know."""
    m = GTID_RE.match(body)
    if not m:
        return None
    domain, server, seq = m.group(1), m.group(2), m.group(3)
    out = {"gtid": f"{domain}-{server}-{seq}", "commit_id": None, "flags": set(),
           "standalone": True}
    tokens = m.group(4).split()
    i = 0
    while i < len(tokens):
        tok = tokens[i]
        if tok.startswith("cid="):
            if not (tok[4:].isdigit() and len(tok) <= 24):
                raise ValueError(f"malformed commit id {tok[:40]!r} on MariaDB GTID line")
            out["commit_id"] = int(tok[4:])
        elif tok in _TOKENS:
            out["flags"].add(_TOKENS[tok])
            if tok == "trans":
                out["standalone"] = False
        elif tok == "XA":  # "XA START <xid>" / "XA COMMIT": the rest is the xid
            out["xa"] = " ".join(tokens[i:])
            out["standalone"] = False
            break
        else:
            raise ValueError(f"unknown token {tok!r} on MariaDB GTID line")
        i += 1
    return out
