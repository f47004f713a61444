"""The module map, read from the code's own imports: the layer rule, and ``docs/modules.md`` drawn from it.

``python tools/module_map.py`` writes ``docs/modules.md``; ``--check`` exits 1 when the committed file
differs from what the imports give now (``tests/test_layers.py`` runs both checks, so neither the
rule nor the picture can drift from the code).

Layers, lowest first; a module may import its own package and any package of a LOWER layer, never a
package beside it in the same layer or above it::

    base      neutrino_ae/__init__.py, errors.py, atomic.py, escape.py, jit.py, logs.py, pidlock.py
    formats   formats/, sched/                  file formats; interval/slot algorithms
    bundle    bundle/                           the bundle on disk and the Bundle a run reads
    report    report/                           the Section contract and registry, results, summary, claims, figures
    sample    sample/, workloads/               the sample bundle's shared model; GPU workloads and collection
    run       run/                              the runner, notebooks, papermill, locks
    cli       cli.py, __main__.py               the command line

Section folders (``block_sched/`` ...) import the package up to the ``sample`` layer (never ``run`` or
``cli``: the runner calls them, not the other way round), their own folder, and no other section's.
Every import counts: module level, inside functions, and relative ones.
"""

from __future__ import annotations

import argparse
import ast
import sys
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PACKAGE = "neutrino_ae"
OUT = REPO / "docs" / "modules.md"

#: (layer, its groups); a group is a subpackage of neutrino_ae or a named set of top-level modules.
LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("base", ("base",)),
    ("formats", ("formats", "sched")),
    ("bundle", ("bundle",)),
    ("report", ("report",)),
    ("sample", ("sample", "workloads")),
    ("run", ("run",)),
    ("cli", ("cli",)),
)
#: Top-level modules of the package and the group each belongs to.
TOP_MODULES = {"__init__": "base", "errors": "base", "atomic": "base", "escape": "base", "jit": "base", "logs": "base",
               "pidlock": "base", "proctree": "base", "console": "base",
               "cli": "cli", "cli_export": "cli", "__main__": "cli"}
#: The highest layer a section folder may import.
SECTIONS_UP_TO = "sample"
SECTIONS = "sections"

LAYER_OF = {group: i for i, (_, groups) in enumerate(LAYERS) for group in groups}
LAYER_INDEX = {name: i for i, (name, _) in enumerate(LAYERS)}


@dataclass(frozen=True)
class Import:
    source: str  # the importing file, relative to the repository (POSIX)
    line: int
    target: str  # the imported module's dotted name


def section_folders(repo: Path = REPO) -> list[str]:
    """Folders beside the package whose ``__init__.py`` declares a SECTION (the registry's rule)."""
    return sorted(p.name for p in repo.iterdir() if p.is_dir() and not p.name.startswith((".", "_"))
                  and (p / "__init__.py").is_file() and "SECTION" in (p / "__init__.py").read_text(encoding="utf-8"))


def source_files(repo: Path = REPO) -> list[Path]:
    files = sorted((repo / PACKAGE).rglob("*.py"))
    for name in section_folders(repo):
        files += sorted((repo / name).rglob("*.py"))
    return [f for f in files if "__pycache__" not in f.parts]


def _module_name(path: Path, repo: Path) -> str:
    parts = list(path.relative_to(repo).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports_of(path: Path, repo: Path = REPO) -> list[Import]:
    """Every import in ``path``, wherever it stands (module level or inside a function), relative ones
    resolved; ``from X import name`` counts as an import of ``X.name`` when that is a module."""
    rel = path.relative_to(repo).as_posix()
    module = _module_name(path, repo)
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found: list[Import] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=rel)):
        if isinstance(node, ast.Import):
            found += [Import(rel, node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[:len(package.split(".")) - node.level + 1]
                target = ".".join([*base, *([node.module] if node.module else [])])
            else:
                target = node.module or ""
            for alias in node.names:
                sub = f"{target}.{alias.name}"
                found.append(Import(rel, node.lineno, sub if _is_module(sub, repo) else target))
    return list(dict.fromkeys(found))  # ``from X import a, b``: one import of X


def _is_module(dotted: str, repo: Path) -> bool:
    path = repo.joinpath(*dotted.split("."))
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


def group_of(dotted: str, sections: list[str]) -> str | None:
    """The group of a module of ours (``neutrino_ae.report.results`` -> ``report``; a section folder's
    module -> ``sections:<name>``); None for anything else (the standard library, numpy ...)."""
    parts = dotted.split(".")
    if parts[0] == PACKAGE:
        if len(parts) == 1:
            return "base"
        if parts[1] in TOP_MODULES:
            return TOP_MODULES[parts[1]]
        return parts[1]
    if parts[0] in sections:
        return f"{SECTIONS}:{parts[0]}"
    return None


def _type_only_lines(path: Path) -> set[int]:
    """Lines of the imports under ``if TYPE_CHECKING:`` in ``path`` (for annotations only)."""
    lines: set[int] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        test = getattr(node, "test", None)
        if isinstance(node, ast.If) and (getattr(test, "id", None) == "TYPE_CHECKING"
                                         or getattr(test, "attr", None) == "TYPE_CHECKING"):
            lines |= {n.lineno for stmt in node.body for n in ast.walk(stmt)
                      if isinstance(n, ast.Import | ast.ImportFrom)}
    return lines


def cycles(repo: Path = REPO) -> list[list[str]]:
    """Groups of our modules that import each other round in a circle (every import, inside functions too,
    as :func:`imports_of` finds them, but for annotations' ``if TYPE_CHECKING:`` imports, which never run),
    each sorted; empty when the imports form no cycle."""
    files = {_module_name(f, repo): f for f in source_files(repo)}
    graph = {}
    for m, f in files.items():
        type_only = _type_only_lines(f)
        graph[m] = sorted({i.target for i in imports_of(f, repo)
                           if i.target in files and i.target != m and i.line not in type_only})
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []
    for root in graph:  # Tarjan's strongly connected components, iteratively
        if root in index:
            continue
        work = [(root, 0)]
        while work:
            node, i = work.pop()
            if i == 0:
                index[node] = low[node] = len(index)
                stack.append(node)
            if i < len(graph[node]):
                work.append((node, i + 1))
                nxt = graph[node][i]
                if nxt not in index:
                    work.append((nxt, 0))
                elif nxt in stack:
                    low[node] = min(low[node], index[nxt])
                continue
            if low[node] == index[node]:
                group = []
                while True:
                    top = stack.pop()
                    group.append(top)
                    if top == node:
                        break
                if len(group) > 1:
                    found.append(sorted(group))
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
    return sorted(found)


def violations(repo: Path = REPO) -> list[str]:
    """Every import that breaks the layer rule, one line each (``file:line: A -> B: why``)."""
    sections = section_folders(repo)
    problems = []
    for path in source_files(repo):
        mine = group_of(_module_name(path, repo), sections)
        for imp in imports_of(path, repo):
            theirs = group_of(imp.target, sections)
            if theirs is None or theirs == mine:
                continue
            why = _why_not(mine, theirs)
            if why:
                problems.append(f"{imp.source}:{imp.line}: imports {imp.target} ({why})")
    return problems


def _why_not(mine: str | None, theirs: str) -> str | None:
    if theirs.startswith(SECTIONS):
        return "the package never imports a section folder" if not (mine or "").startswith(SECTIONS) else \
            "no section folder imports another"
    if theirs not in LAYER_OF:
        return f"{theirs} is in no layer: add it to LAYERS in tools/module_map.py"
    if mine is None:
        return None
    if mine.startswith(SECTIONS):
        if LAYER_OF[theirs] > LAYER_INDEX[SECTIONS_UP_TO]:
            return f"section folders import up to the {SECTIONS_UP_TO} layer; {theirs} is above it"
        return None
    if mine not in LAYER_OF:
        return f"{mine} is in no layer: add it to LAYERS in tools/module_map.py"
    if LAYER_OF[theirs] > LAYER_OF[mine]:
        return f"{mine} is below {theirs}"
    if LAYER_OF[theirs] == LAYER_OF[mine]:
        return f"{mine} and {theirs} share a layer and import neither each other"
    return None


# ------------------------------------------------------------------------------------------- the picture


def render(repo: Path = REPO) -> str:
    """``docs/modules.md``: the layers, the imports between groups (mermaid) and every module."""
    sections = section_folders(repo)
    edges: dict[tuple[str, str], int] = defaultdict(int)
    modules: dict[str, list[tuple[str, list[str]]]] = defaultdict(list)
    for path in source_files(repo):
        mine = group_of(_module_name(path, repo), sections) or "?"
        node = SECTIONS if mine.startswith(SECTIONS) else mine
        uses = set()
        for imp in imports_of(path, repo):
            theirs = group_of(imp.target, sections)
            if theirs is None or theirs == mine:
                continue
            uses.add(SECTIONS if theirs.startswith(SECTIONS) else theirs)
        for target in uses - {node}:
            edges[(node, target)] += 1
        if node != SECTIONS:
            modules[node].append((path.relative_to(repo).as_posix(), sorted(uses)))
    out = ["# Module map", "",
           "Generated by `python tools/module_map.py` from the imports in the code (every import, module level",
           "or inside a function); `tests/test_layers.py` fails when this file is out of date or an import",
           "breaks the layer rule. Do not edit by hand.", "",
           "Layers, lowest first. A module imports its own package and packages of lower layers only; section",
           "folders (every folder beside the package whose `__init__.py` declares a `SECTION`, the registry's rule)",
           f"import layers up to `{SECTIONS_UP_TO}`, their own folder, and no other section. An arrow `A --> B` is",
           "\"A imports B\" (the number: how many modules of A do; the section folders' arrows carry none, so that a",
           "section added or rewritten leaves this file as it is).", "",
           "```mermaid", "flowchart TD", f'    {SECTIONS}["section folders"]']
    for name, groups in reversed(LAYERS):
        out.append(f'    subgraph L_{name}["{name}"]')
        out += [f"        {g}" for g in groups]
        out.append("    end")
    for (a, b), n in sorted(edges.items(), key=lambda e: (-_rank(e[0][0]), -_rank(e[0][1]), e[0])):
        out.append(f"    {a} --> {b}" if a == SECTIONS else f"    {a} -->|{n}| {b}")
    out += ["```", "", "| layer | group | module | imports (other groups) |", "|---|---|---|---|"]
    for name, groups in reversed(LAYERS):
        for group in groups:
            for rel, uses in modules.get(group, []):
                out.append(f"| {name} | {group} | `{rel}` | {', '.join(uses) or '-'} |")
    return "\n".join(out) + "\n"


def _rank(node: str) -> int:
    return len(LAYERS) if node == SECTIONS else LAYER_OF.get(node, -1)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Write docs/modules.md from the imports; check the layer rule.")
    parser.add_argument("--check", action="store_true",
                        help="exit 1 when an import breaks the layer rule or docs/modules.md is out of date")
    args = parser.parse_args(argv)
    problems = violations()
    for p in problems:
        print(f"layer rule: {p}", file=sys.stderr)
    text = render()
    if args.check:
        current = OUT.read_text(encoding="utf-8") if OUT.is_file() else ""
        if current != text:
            print(f"error: {OUT.relative_to(REPO)} is out of date; run: python tools/module_map.py", file=sys.stderr)
            return 1
        return 1 if problems else 0
    OUT.write_text(text, encoding="utf-8")
    print(f"wrote {OUT.relative_to(REPO)}")
    return 1 if problems else 0


if __name__ == "__main__":
    raise SystemExit(main())
