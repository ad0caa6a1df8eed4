"""MySQL 8's GTID event as `mysqlbinlog` prints it (`Gtid_log_event::print`, sql/log_event.cc):

    #240501  3:32:37 server id 1  end_log_pos 234 CRC32 0xc6d6a036 	GTID	last_committed=0	sequence_number=1	rbr_only=yes	original_committed_timestamp=1714534357425326	immediate_commit_timestamp=1714534357425326	transaction_length=217
    ...
    SET @@SESSION.GTID_NEXT= '88ebc247-06ef-11ef-97ee-0242ac130004:1'/*!*/;

`Anonymous_GTID` replaces `GTID` when gtid_mode=OFF (GTID_NEXT is then 'ANONYMOUS'). Both
logical timestamps restart in every binlog file (semantics.md §1.3). Timestamps are in µs.
"""
from __future__ import annotations

import re

GTID_RE = re.compile(r"^(GTID|Anonymous_GTID)\s+(last_committed=.*)$")
GTID_NEXT_RE = re.compile(r"^SET @@SESSION\.GTID_NEXT= '([^']*)'")
_INT_FIELDS = ("last_committed", "sequence_number", "original_committed_timestamp",
               "immediate_commit_timestamp", "transaction_length",
               "original_server_version", "immediate_server_version")


def parse_gtid(body: str) -> dict | None:
    """The fields of a MySQL (Anonymous_)GTID event body, or None when it is not one. Raises
    ValueError when the line is one but its fields are malformed."""
    m = GTID_RE.match(body)
    if not m:
        return None
    fields: dict = {"anonymous": m.group(1) == "Anonymous_GTID"}
    for item in m.group(2).split():
        name, eq, value = item.partition("=")
        if not eq:
            raise ValueError(f"malformed field {item!r} on MySQL GTID line")
        if name in _INT_FIELDS:
            if not (value.isdigit() and len(value) <= 20):    # 64-bit values
                raise ValueError(f"{name}={value!r} is not a number")
            fields[name] = int(value)
        else:
            fields[name] = value
    for need in ("last_committed", "sequence_number"):
        if need not in fields:
            raise ValueError(f"MySQL GTID line without {need}")
    if fields["last_committed"] >= fields["sequence_number"]:
        raise ValueError(f"last_committed {fields['last_committed']} is not below "
                         f"sequence_number {fields['sequence_number']}")
    return fields
