"""Import cycles and long functions, for `make lint` (make check-structure).

Fails on an import cycle that is not listed in KNOWN below with its reason:
- among the Rust crate's top-level modules (src/X.rs, src/X/): a file of X
  naming `crate::Y` (in a `use` or a path) makes X depend on Y;
- among the submodules of one Rust module (src/X/a.rs naming `super::b` or
  `crate::X::b`), where the cycles that make code hard to move live;
- among the Python package's modules (python/idlewave): imports run when a
  module is imported (its top level, class bodies, `if`/`try` blocks).
  Imports inside functions are left out: they run at call time, after every
  module is loaded, and are the usual way to break a cycle (or to defer a
  heavy import such as matplotlib); imports under `if TYPE_CHECKING:` never
  run. Importing `a.b.c` also runs `a/b/__init__.py`; that implicit edge is
  left out too, as every module would otherwise depend on the package.
A KNOWN entry that no longer occurs fails as well, so the list stays true.

Also reports (without failing) Rust functions over 80 lines in src/ and
source files over 800 lines; a function that stays long says why in a
comment starting `// Long:` in the lines just above it.

Standard library only.
"""

from __future__ import annotations

import ast
import re
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SRC = ROOT / "src"
PY = ROOT / "python" / "idlewave"
MAX_FN, MAX_FILE = 80, 800

# Cycles that stay, (graph, modules): reason. A new cycle, or one of these
# grown or gone, fails until this list says so.
KNOWN: dict[tuple[str, frozenset[str]], str] = {}


def rust_files(module: Path) -> list[Path]:
    return [module] if module.is_file() else sorted(module.rglob("*.rs"))


def strip_rust(text: str) -> str:
    """The code without comments, string and char literals (their braces and paths do not count); newlines kept."""
    out: list[str] = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            i = text.find("\n", i)
            i = n if i < 0 else i
        elif text.startswith("/*", i):
            depth, j = 1, i + 2
            while j < n and depth:
                depth += 1 if text.startswith("/*", j) else -1 if text.startswith("*/", j) else 0
                j += 2 if text.startswith(("/*", "*/"), j) else 1
            out.append("\n" * text.count("\n", i, j))
            i = j
        elif (m := re.compile(r'b?r(#*)"').match(text, i)) and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            end = text.find('"' + m.group(1), m.end())
            end = n if end < 0 else end + 1 + len(m.group(1))
            out.append('""' + "\n" * text.count("\n", i, end))
            i = end
        elif c == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            out.append('""' + "\n" * text.count("\n", i, j))
            i = j + 1
        elif c == "'" and (m := re.compile(r"'(\\(?:u\{[0-9a-fA-F]+\}|x[0-9a-fA-F]{2}|.)|[^'\\\n])'").match(text, i)):
            out.append("' '")
            i = m.end()
        else:
            out.append(c)
            i += 1
    return "".join(out)


def without_tests(code: str) -> str:
    """Stripped code without its `#[cfg(test)]` items (tests may use any module)."""
    while m := re.search(r"#\[cfg\(test\)\]\s*(?:pub\s+)?mod\s+\w+\s*\{", code):
        depth, j = 1, m.end()
        while j < len(code) and depth:
            depth += {"{": 1, "}": -1}.get(code[j], 0)
            j += 1
        code = code[: m.start()] + "\n" * code.count("\n", m.start(), j) + code[j:]
    return code


def test_files() -> set[Path]:
    """Files of modules declared `#[cfg(test)] mod x;`."""
    found = set()
    for f in SRC.rglob("*.rs"):
        here = f.parent if f.name in ("mod.rs", "lib.rs") else f.with_suffix("")
        for name in re.findall(r"#\[cfg\(test\)\]\s*mod\s+(\w+)\s*;", f.read_text()):
            found |= {here / f"{name}.rs", *(here / name).rglob("*.rs")}
    return found


def use_targets(code: str, prefix: str) -> set[str]:
    """Names after `prefix::`, in paths and in `use prefix::{a, b::c}` groups."""
    found = set(re.findall(rf"\b{prefix}::(\w+)", code))
    for group in re.findall(rf"\b{prefix}::\{{([^;]*?)\}}\s*;", code, flags=re.S):
        depth, start, parts = 0, 0, []
        for i, ch in enumerate(group + ","):
            if ch == "{":
                depth += 1
            elif ch == "}":
                depth -= 1
            elif ch == "," and depth == 0:
                parts.append(group[start:i])
                start = i + 1
        found |= {m.group(1) for p in parts if (m := re.match(r"\s*(\w+)", p))}
    return found


def rust_graphs() -> dict[str, dict[str, set[str]]]:
    """{"crate": top-level graph, "crate::X": graph of X's submodules}."""
    tops = {p.stem: p for p in SRC.iterdir() if (p.suffix == ".rs" and p.stem != "lib") or (p.is_dir() and (p / "mod.rs").exists())}
    tops = {k: p for k, p in tops.items() if p not in test_files()}
    graphs: dict[str, dict[str, set[str]]] = {"crate": defaultdict(set)}
    tests = test_files()
    for name, path in tops.items():
        sub: dict[str, set[str]] = defaultdict(set)
        for f in rust_files(path):
            if f in tests:
                continue
            code = without_tests(strip_rust(f.read_text()))
            graphs["crate"][name] |= {t for t in use_targets(code, "crate") if t in tops and t != name}
            if path.is_dir() and f.parent == path and f.stem != "mod":
                subs = {p.stem for p in path.glob("*.rs") if p.stem != "mod"}
                targets = use_targets(code, "super") | {m for m in re.findall(rf"\bcrate::{name}::(\w+)", code)}
                sub[f.stem] |= {t for t in targets if t in subs and t != f.stem}
        if sub:
            graphs[f"crate::{name}"] = sub
    return graphs


def python_graph() -> dict[str, set[str]]:
    # .pyi: the compiled engine (idlewave._engine) is a module too
    modules = {".".join(p.relative_to(PY.parent).with_suffix("").parts).removesuffix(".__init__"): p for p in [*PY.rglob("*.py"), *PY.rglob("*.pyi")]}
    graph: dict[str, set[str]] = defaultdict(set)

    def resolve(name: str) -> str | None:
        while name and name not in modules:
            name = name.rpartition(".")[0]
        return name or None

    for mod, path in modules.items():
        package = mod if path.name == "__init__.py" else mod.rpartition(".")[0]
        todo: list[ast.stmt] = list(ast.parse(path.read_text()).body)
        while todo:
            node = todo.pop()
            if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
                todo.extend(node.orelse)
                continue
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    base = ".".join(package.split(".")[: len(package.split(".")) - node.level + 1] + ([base] if base else []))
                targets = [f"{base}.{a.name}" for a in node.names]
            else:
                for field in ("body", "orelse", "finalbody", "handlers"):
                    if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                        todo.extend(getattr(node, field, []))
                continue
            for t in targets:
                if (r := resolve(t)) and r != mod and r.startswith("idlewave"):
                    graph[mod].add(r)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[frozenset[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[frozenset[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            scc = set()
            while True:
                w = stack.pop()
                on.discard(w)
                scc.add(w)
                if w == v:
                    break
            if len(scc) > 1:
                out.append(frozenset(scc))

    sys.setrecursionlimit(10000)
    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def long_functions() -> list[tuple[int, str, bool]]:
    """(lines, file:line name, says why) of every Rust function in src/ over MAX_FN lines."""
    found = []
    for f in sorted(SRC.rglob("*.rs")):
        raw = f.read_text().splitlines()
        code = strip_rust("\n".join(raw)).splitlines()
        for i, line in enumerate(code):
            m = re.match(r"\s*(?:pub(?:\([^)]*\))?\s+)?(?:const\s+)?(?:async\s+)?(?:unsafe\s+)?(?:extern\s+\"\w*\"\s+)?fn\s+(\w+)", line)
            if not m:
                continue
            depth, opened, j = 0, False, i
            while j < len(code):
                seg = code[j] if j > i else code[j][m.end():]
                for ch in seg:
                    if ch == ";" and not opened and depth == 0:
                        break  # a declaration without a body
                    if ch == "{":
                        depth, opened = depth + 1, True
                    elif ch == "}":
                        depth -= 1
                else:
                    if opened and depth == 0:
                        break
                    j += 1
                    continue
                break
            n = j - i + 1
            if opened and n > MAX_FN:
                above = "\n".join(raw[max(0, i - 6): i])
                found.append((n, f"{f.relative_to(ROOT)}:{i + 1} {m.group(1)}", "// Long:" in above))
    return sorted(found, reverse=True)


def main() -> int:
    failed = False
    seen: set[tuple[str, frozenset[str]]] = set()
    graphs = {f"rust {k}": v for k, v in rust_graphs().items()} | {"python idlewave": python_graph()}
    for where, graph in graphs.items():
        for scc in cycles(graph):
            key = (where, scc)
            seen.add(key)
            if key in KNOWN:
                print(f"known cycle ({where}): {' <-> '.join(sorted(scc))}: {KNOWN[key]}")
            else:
                failed = True
                print(f"import cycle ({where}): {' <-> '.join(sorted(scc))}")
    for key in set(KNOWN) - seen:
        failed = True
        print(f"KNOWN lists a cycle that no longer occurs ({key[0]}; remove it): {' <-> '.join(sorted(key[1]))}")
    fns = long_functions()
    print(f"{len(fns)} Rust functions over {MAX_FN} lines ({sum(1 for *_, why in fns if not why)} without a `// Long:` reason):")
    for n, where, why in fns:
        print(f"  {n:4d}  {where}{'' if why else '  (no reason given)'}")
    big = sorted((len(p.read_text().splitlines()), p.relative_to(ROOT)) for p in [*SRC.rglob("*.rs"), *PY.rglob("*.py"), *PY.rglob("*.c")])
    big = [(n, p) for n, p in big if n > MAX_FILE]
    print(f"{len(big)} source files over {MAX_FILE} lines:")
    for n, p in reversed(big):
        print(f"  {n:5d}  {p}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
