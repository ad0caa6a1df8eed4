"""Reports and pictures: what a trace gets from each scheduler (`commitsched report`), a TLC
counterexample drawn as a schedule (`commitsched explain`) and the documentation site
(`make docs`). Figures are SVG written by hand-rolled code (`figures.py`, `gantt.py`) and
graphviz `dot` (`depgraph.py`): no plotting library, so pages are small and readable offline."""
