"""Every ``docs/reference/<file>.md §N`` the repository cites names a file and a section that exist.

The controllers cite KubeRay's behaviour by section of the reference summaries in docs/reference;
a citation of a missing section sends a reader nowhere, so this fails on each one.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
REFERENCE = ROOT / "docs" / "reference"
CITATION = re.compile(r"docs/reference/([a-z-]+\.md)(?: §(\d+(?:\.\d+)*))?")
HEADING = re.compile(r"^#{2,4} §(\d+(?:\.\d+)*)\b", re.M)


def _citations() -> list[tuple[str, str, str | None]]:
    found = []
    for top in ("controllers", "kuberay_py", "tests", "bench", "docs"):
        for path in sorted((ROOT / top).rglob("*")):
            if path.suffix not in (".py", ".md", ".json") or "fixtures" in path.parts:
                continue
            for match in CITATION.finditer(path.read_text(errors="replace")):
                found.append((str(path.relative_to(ROOT)), match.group(1), match.group(2)))
    return found


def test_every_cited_reference_section_exists() -> None:
    citations = _citations()
    assert len(citations) >= 30  # the controllers cite these summaries throughout
    sections = {p.name: set(HEADING.findall(p.read_text())) for p in REFERENCE.glob("*.md")}
    missing = [
        f"{where}: {name} §{section}" if section else f"{where}: {name}"
        for where, name, section in citations
        if name not in sections or (section is not None and section not in sections[name])
    ]
    assert missing == [], "\n".join(missing)
