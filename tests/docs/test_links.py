"""Every relative link in the Markdown docs leads somewhere: the file exists and, when
the link names a heading, the heading does (GitHub's anchor rule)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent.parent
PAGES = sorted([ROOT / "README.md", ROOT / "THREAT_MODEL.md", ROOT / "reporters" / "README.md",
                *(ROOT / "docs").glob("*.md")])
_LINK = re.compile(r"\]\(([^)\s]+)\)")
_FENCE = re.compile(r"^```.*?^```", re.S | re.M)


def anchors(page: Path) -> set[str]:
    """The anchors GitHub gives the page's headings."""
    out = set()
    for line in _FENCE.sub("", page.read_text()).splitlines():
        if line.startswith("#"):
            text = re.sub(r"[^\w\- ]", "", line.lstrip("#").strip().lower())
            out.add(text.replace(" ", "-"))
    return out


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_relative_links_resolve(page: Path) -> None:
    for target in _LINK.findall(_FENCE.sub("", page.read_text())):
        if re.match(r"^[a-z]+:", target):
            continue  # http(s), mailto: not this test's business
        path, _, anchor = target.partition("#")
        linked = (page.parent / path).resolve() if path else page
        assert linked.exists(), f"{page.name}: {target}"
        if anchor and linked.suffix == ".md":
            assert anchor in anchors(linked), f"{page.name}: {target}"
