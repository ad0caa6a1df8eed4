"""The docs hold together: every relative markdown link in docs/ (its folders too, e.g.
docs/lag-check/) and README.md reaches a file, and a #fragment into a page one of its headings;
every machine-written table's markers stand once, and the Makefile target that writes them
names the file they are in (lag_check.py report --doc FILE --doc-marker NAME)."""
from __future__ import annotations

import glob
import os
import re
import shutil
import subprocess

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)")
MARKER = re.compile(r"<!-- ([\w-]+):begin -->")


def pages() -> list[str]:
    return (sorted(glob.glob(os.path.join(REPO, "docs", "**", "*.md"), recursive=True))
            + [os.path.join(REPO, "README.md")])


def prose(path: str) -> str:
    """The page without its fenced code blocks (a link in code is not a link)."""
    return re.sub(r"^```.*?^```", "", open(path, encoding="utf-8").read(), flags=re.S | re.M)


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def anchors(path: str) -> set[str]:
    return {slug(m.group(1)) for m in re.finditer(r"^#+ (.*)$", prose(path), re.M)}


def test_every_relative_link_reaches_a_file_and_heading():
    bad, seen = [], 0
    for page in pages():
        for m in LINK.finditer(prose(page)):
            url = m.group(1)
            if re.match(r"[a-z]+:", url):
                continue                      # https:, mailto:
            path, _, frag = url.partition("#")
            if path.endswith(".html"):
                continue                      # a page `make docs` generates (bugs, traces)
            target = os.path.normpath(os.path.join(os.path.dirname(page), path)) if path else page
            seen += 1
            where = f"{os.path.relpath(page, REPO)}: ({url})"
            if not os.path.exists(target):
                bad.append(f"{where}: no such file")
            elif frag and target.endswith(".md") and frag not in anchors(target):
                bad.append(f"{where}: no heading with that anchor")
    assert seen > 50                          # the links were found at all
    assert not bad, "\n".join(bad)


def doc_markers() -> dict[str, str]:
    """Each begin marker in docs/ -> the doc it stands in; each once, its end after it."""
    where: dict[str, str] = {}
    for page in pages():
        text = open(page, encoding="utf-8").read()
        for name in MARKER.findall(text):
            assert name not in where, f"marker {name} in {where.get(name)} and {page}"
            assert text.count(f"<!-- {name}:begin -->") == 1, (page, name)
            assert text.index(f"<!-- {name}:end -->") > text.index(f"<!-- {name}:begin -->")
            where[name] = os.path.relpath(page, REPO)
    return where


@pytest.mark.skipif(shutil.which("make") is None, reason="needs make")
def test_each_report_target_writes_into_the_doc_that_holds_its_markers():
    where = doc_markers()
    assert "lag-check-p" in where             # the markers were found at all
    # every lag-check target make knows, those its macros define included (its database,
    # printed without running anything: -q asks, -p prints)
    database = subprocess.run(["make", "-qp"], cwd=REPO, capture_output=True, text=True).stdout
    targets = sorted(set(re.findall(r"^(lag-check[\w.-]*):", database, re.M)))
    # -n prints the commands without running them (the recursive $(MAKE) lines print theirs)
    out = subprocess.run(["make", "-n", *targets], cwd=REPO, capture_output=True, text=True,
                         check=True).stdout
    written = {}
    for line in out.replace("\\\n", " ").splitlines():      # a command's continued lines joined
        m = re.search(r"--doc (\S+)", line)
        if m and "lag_check.py report" in line:
            marker = re.search(r"--doc-marker (\S+)", line)
            written[marker.group(1) if marker else "lag-check"] = m.group(1)   # its default
    assert written == where
