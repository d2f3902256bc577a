"""The manual builds as a MkDocs site with ``--strict`` (any warning — a broken link or anchor, a
page missing from the nav — fails), its API/version table is the one ApiVersions advertises, and
the README stays the front door: short, with the two set-up commands.
"""
from __future__ import annotations

import html
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from protocol import api_versions
from protocol.messages import REQUESTS
from tests.support.doc_pages import README, REPO, code_blocks, page

README_MAX_LINES = 220


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("site")
    proc = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(REPO / "mkdocs.yml"),
                           "-d", str(out)], capture_output=True, text=True, timeout=300, cwd=REPO,
                          env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})
    assert proc.returncode == 0, f"mkdocs build --strict failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-5000:]}"
    return out


def table_rows(page_html: str) -> list[list[list[str]]]:
    """The body rows of the page's tables: per cell, its lines (split at <br>) as text."""
    rows = []
    for row in re.findall(r"<tr>(.*?)</tr>", page_html, re.S):
        cells = re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)
        if cells:
            rows.append([[html.unescape(re.sub(r"<[^>]+>", "", part)).strip() for part in re.split(r"<br\s*/?>", c)]
                         for c in cells])
    return rows


def test_site_builds_strictly_with_every_page(site: Path):
    assert (site / "index.html").is_file()
    for name in ("getting-started", "configuration", "storage", "security", "cluster", "testing", "containers",
                 "observability", "compatibility", "benchmarks", "development/architecture",
                 "development/adding-an-api", "development/tests", "development/conventions"):
        assert (site / name / "index.html").is_file(), f"the site has no page {name}"
    assert (site / "console-group.png").is_file()
    assert 'src="../console-group.png"' in (site / "observability" / "index.html").read_text()


def test_compatibility_page_lists_every_api_with_its_versions(site: Path):
    rows = table_rows((site / "compatibility" / "index.html").read_text())
    listed = {int(cells[0][0]): cells for cells in rows if cells[0][0].isdigit()}
    want = {int(k): f"{low}–{high}" for k, (low, high) in api_versions.SUPPORTED_WITH_SHARE_GROUPS.items()}
    assert {k: cells[2][0].removesuffix(" ¹") for k, cells in listed.items()} == want
    for key, ([_], [name, java], [versions], [module]) in listed.items():
        assert REQUESTS[key].__name__ == f"{name}Request"                                # Kafka's request name
        assert java == "ApiKey." + re.sub(r"(?<!^)(?=[A-Z])", "_", name).upper()        # and its ApiKeys name
        assert (REPO / "broker" / "apis" / module).is_file(), (name, module)          # where it is handled
        assert versions.endswith(" ¹") == (key not in api_versions.SUPPORTED), name    # share groups only


def test_compatibility_page_keeps_no_table_by_hand():
    assert "<!-- samsa:api-versions -->" in page("compatibility.md")
    assert "| 0 | Produce" not in page("compatibility.md")


def test_readme_is_the_front_door():
    text = README.read_text()
    assert len(text.splitlines()) <= README_MAX_LINES
    blocks = code_blocks(text, "sh")
    assert "./scripts/serve.sh\n" in blocks and "./scripts/test.sh\n" in blocks
    for target in re.findall(r"\]\(([^)#:]+)(?:#[^)]*)?\)", text):       # relative links resolve
        assert (REPO / target).exists(), f"README links to {target}, which does not exist"
