"""Import the scripts of traces/record/ (plain files, not a package) for a test module, leaving
neither their folder on sys.path nor their `record` module (calibrate.py imports
traces/record/record.py under that name) to the other test modules."""
from __future__ import annotations

import importlib
import os
import sys

RECORD_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                          "traces", "record")


def import_record_scripts(*names: str) -> tuple:
    saved = sys.modules.get("record")
    sys.path.insert(0, RECORD_DIR)
    try:
        return tuple(importlib.import_module(n) for n in names)
    finally:
        while RECORD_DIR in sys.path:
            sys.path.remove(RECORD_DIR)
        if saved is None:
            sys.modules.pop("record", None)
        else:
            sys.modules["record"] = saved
