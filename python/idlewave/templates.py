"""`idlewave init`: the shipped examples (inside the package, so a wheel has
them) as commented templates to start a scenario or a study from."""

from __future__ import annotations

import re
import tomllib
from importlib import resources
from pathlib import Path

EXAMPLES = Path(str(resources.files("idlewave") / "examples"))


class TemplateError(ValueError):
    """An unknown template or a file that must not be overwritten; the message says which."""


def templates() -> dict[str, tuple[Path, str]]:
    """name → (file, what it is): every example scenario, and the studies as `study-<name>`."""
    out = {}
    for path in sorted(EXAMPLES.glob("*.toml")):
        out[path.stem] = (path, _first_comment(path))
    for path in sorted((EXAMPLES / "studies").glob("*.toml")):
        out[f"study-{path.stem}"] = (path, _first_comment(path))
    return out


def _first_comment(path: Path) -> str:
    lines = []
    for line in path.read_text().splitlines():
        if not line.startswith("#"):
            break
        lines.append(line.lstrip("# ").strip())
    return " ".join(lines).split(". ")[0].rstrip(".") if lines else ""


def find(name: str) -> Path:
    """A template by name, or the first example scenario of workload kind `name`."""
    known = templates()
    if name in known:
        return known[name][0]
    for path, _ in known.values():
        if path.parent != EXAMPLES:
            continue
        doc = tomllib.loads(path.read_text())
        # its workload's kind, or one of its jobs'
        kinds = [w.get("kind") for w in [doc.get("workload", {})] + [j.get("workload", {}) for j in doc.get("jobs", [])]]
        if name in kinds:
            return path
    raise TemplateError(f"no template {name!r}; `idlewave init --list` lists them (names and workload kinds)")


def write(name: str, output: Path, force: bool = False) -> list[Path]:
    """Writes the template (and the files it names beside it, e.g. a partner file); returns what it wrote."""
    src = find(name)
    text = src.read_text()
    sides = [src.parent / f for f in re.findall(r'=\s*"([^"/]+\.(?:txt|goal|csv|toml))"', text) if (src.parent / f).is_file()]
    targets = [output] + [output.parent / s.name for s in sides]
    for t in targets:  # --force replaces files init wrote, never a directory (or a device) of that name
        if t.exists() and not t.is_file():
            what = "a directory" if t.is_dir() else "not a regular file"
            hint = f"; name the file to write, e.g. -o {output / f'{name}.toml'}" if t == output and t.is_dir() else ""
            raise TemplateError(f"{t}: exists and is {what}, which init never replaces, even with --force{hint}")
    existing = [t for t in targets if t.exists()]
    if existing and not force:
        raise TemplateError(f"{existing[0]}: exists (--force to overwrite)")
    from idlewave.results import write_text

    written: list[Path] = []
    try:  # all or none of the new files: a write that fails removes the ones this call created
        for target, content in zip(targets, [text] + [s.read_text() for s in sides]):
            write_text(target, content)
            if target not in existing:
                written.append(target)
    except BaseException:
        for w in written:
            w.unlink(missing_ok=True)
        raise
    return targets
