"""Reports and pictures: what a trace gets from each scheduler (`commitsched report`), a TLC
counterexample drawn as a schedule (`commitsched explain`) and the documentation site
(`make docs`). Figures are SVG written by hand-rolled code (`figures.py`, `gantt.py`) and
graphviz `dot` (`depgraph.py`): no plotting library, so pages are small and readable offline."""


def safe_text(text: str) -> str:
    """`text` with what UTF-8 cannot encode (a lone surrogate from a trace's JSON `\\ud800`)
    written as a backslash escape, so pages and graphviz input always encode."""
    return text.encode("utf-8", "backslashreplace").decode("utf-8")
