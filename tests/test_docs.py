"""The README stays a short front page; everything else lives in docs/ (built by `make docs`)."""

import re
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"


def fenced_blocks(text: str) -> list[tuple[int, list[str]]]:
    """(line number of the opening fence, lines inside) for each fenced code block."""
    blocks, inside, start, lines = [], False, 0, []
    for n, line in enumerate(text.splitlines(), 1):
        if line.startswith("```"):
            if inside:
                blocks.append((start, lines))
            inside, start, lines = not inside, n, []
        elif inside:
            lines.append(line)
    return blocks


def slug(heading: str) -> str:
    """The anchor GitHub and MkDocs give a heading (lowercase, punctuation dropped, spaces to dashes)."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    text = path.read_text()
    in_code = {n for start, lines in fenced_blocks(text) for n in range(start, start + len(lines) + 2)}
    numbered = [(n, line) for n, line in enumerate(text.splitlines(), 1)]
    heads = [line.lstrip("#").strip() for n, line in numbered if re.match(r"^#{1,6} ", line) and n not in in_code]
    return {slug(h) for h in heads}


def test_readme_is_short():
    lines = README.read_text().splitlines()
    assert len(lines) <= 200, f"README.md has {len(lines)} lines: move detail into docs/"


def test_readme_starts_with_the_two_commands():
    text = README.read_text()
    start, first = fenced_blocks(text)[0]
    commands = [line.split("#")[0].strip() for line in first if line.strip()]
    assert commands[:2] == ["make demo", "make test"], commands
    before = "\n".join(text.splitlines()[: start - 1])
    assert "`" not in before, "no command before `make demo` and `make test`"


def test_readme_has_no_history():
    text = README.read_text()
    for pattern, what in [(r"(?i)\bissues? \d", "an issue number"), (r"#\d", "an issue number"),
                          (r"(?i)\bsessions?\b", "'session'"), (r"\b20\d\d-\d", "a date")]:
        found = re.search(pattern, text)
        assert found is None, f"README.md holds {what} ({found.group(0)!r}): history goes in CHANGELOG.md"


def test_readme_relative_links_resolve():
    text = README.read_text()
    broken = []
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if re.match(r"[a-z]+:", target):
            continue
        path, _, anchor = target.partition("#")
        file = (ROOT / path) if path else README
        if not file.exists():
            broken.append(target)
        elif anchor and file.suffix == ".md" and anchor not in anchors(file):
            broken.append(target)
    assert not broken, f"README.md links to missing files or anchors: {broken}"
