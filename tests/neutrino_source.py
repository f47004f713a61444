"""Where the tests find the real Neutrino source (MIT), and the facts they read from it.

The tarballs are test inputs kept outside the repo (``../shared/neutrino-src`` beside a checkout,
or ``$NEUTRINO_SRC``); nothing of them is copied into the repo. Tests that need them skip with
:func:`missing_reason` when they are absent, so a fresh clone on its own still passes.
"""

from __future__ import annotations

import argparse
import ast
import io
import os
import tarfile
from functools import cache
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
BRANCHES = ("artifact", "main")


def source_dir() -> Path:
    return Path(os.environ.get("NEUTRINO_SRC", REPO.parent / "shared" / "neutrino-src"))


def tarball(branch: str) -> Path:
    return source_dir() / f"neutrino-{branch}.tar.gz"


def missing_reason(branch: str = "artifact") -> str | None:
    path = tarball(branch)
    if path.is_file():
        return None
    return f"Neutrino source {path} not found (set NEUTRINO_SRC to the folder of the tarballs)"


@cache
def read_member(branch: str, suffix: str) -> str:
    """Text of the one file in the branch's tarball whose path ends with ``suffix``."""
    with tarfile.open(tarball(branch)) as tar:
        names = [m for m in tar.getmembers() if m.isfile() and m.name.endswith(suffix)]
        if len(names) != 1:
            raise FileNotFoundError(f"{tarball(branch)}: {len(names)} members end with {suffix!r}")
        data = tar.extractfile(names[0])
        assert data is not None
        return io.TextIOWrapper(data, encoding="utf-8").read()


@cache
def builtin_tools(branch: str) -> frozenset[str]:
    """Names ``-p`` accepts without a path: the branch's tools/ files (``.toml`` on artifact, ``.py`` on main)."""
    ext = ".toml" if branch == "artifact" else ".py"
    with tarfile.open(tarball(branch)) as tar:
        names = [Path(m.name) for m in tar.getmembers() if m.isfile()]
    return frozenset(n.stem for n in names if n.parent.name == "tools" and n.parent.parent.name == "neutrino"
                     and n.suffix == ext and n.stem != "__init__")


def cli_parser(branch: str) -> argparse.ArgumentParser:
    """A parser with exactly the options of the branch's ``neutrino/cli.py``, read from its source:
    every ``parser.add_argument(...)`` call with its option strings, action, nargs and required."""
    tree = ast.parse(read_member(branch, "neutrino/cli.py"))
    parser = argparse.ArgumentParser(prog="neutrino", exit_on_error=False, add_help=True)
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and node.func.attr == "add_argument"):
            continue
        names = [a.value for a in node.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
        kw: dict[str, object] = {}
        for k in node.keywords:
            if k.arg == "action" and isinstance(k.value, ast.Constant):
                kw["action"] = k.value.value
            elif k.arg == "required" and isinstance(k.value, ast.Constant):
                kw["required"] = k.value.value
            elif k.arg == "nargs" and isinstance(k.value, ast.Attribute) and k.value.attr == "REMAINDER":
                kw["nargs"] = argparse.REMAINDER
        parser.add_argument(*names, **kw)  # type: ignore[arg-type]
    return parser


def parse_cli(branch: str, argv: list[str]) -> argparse.Namespace:
    """Parse ``argv`` (what follows ``neutrino``) as the real CLI would; a rejection raises ValueError."""
    try:
        return cli_parser(branch).parse_args(argv)
    except (argparse.ArgumentError, SystemExit) as exc:
        raise ValueError(f"neutrino {' '.join(argv)}: rejected by the {branch} CLI ({exc})") from None


def extract_tree(branch: str, into: Path) -> Path:
    """Extract the branch's tarball under ``into`` (safe ``data`` filter); return the tree's root
    (the folder holding ``neutrino/``). Tests run the artifact's own scripts from there."""
    with tarfile.open(tarball(branch)) as tar:
        tar.extractall(into, filter="data")
    (root,) = [p for p in into.iterdir() if (p / "neutrino" / "__init__.py").is_file()]
    return root
