"""What a headless run publishes, switched in as one set by one rename (issue 47).

An output folder (``results/static/``) holds one run's *set*: ``summary.json``, ``summary.md``,
``verdict.json``, ``<name>.executed.ipynb``, the section folders and, after a failed run, its files
under failed names (:data:`FAILED_NAMES`, :func:`failed_name`). Each set is a *generation*, a hidden
folder ``.neutrino-ae.gen-<id>/`` holding all of it, and ``.neutrino-ae.current`` is a symbolic link
naming the published generation: the one pointer. Every published name is a fixed link through it
(``summary.json -> .neutrino-ae.current/summary.json``, ``dmat -> .neutrino-ae.current/dmat``), so the
documented paths read the published set, whole, whichever it is. ``run.log`` and the lock are the
folder's own, in no set.

A run (:class:`Generations`, under the folder's lock):

1. :meth:`~Generations.recover`: what a killed run left is settled by one rule: the generation
   ``.neutrino-ae.current`` names is the published set; every other generation, temporary link or
   link to a name the current set lacks is removed. Files at published names that are not our links
   (a folder from before generations, a notebook run from Jupyter that wrote in place) are *adopted*:
   linked into a new generation that is then published as below, the same bytes under every name.
2. :meth:`~Generations.begin`: a new generation holding hard links of the current one (no extra
   space: every result is written by renaming a new file over its name, never in place), into which
   the kernel writes as its ``output_dir`` (a section's cache reads its previous results there).
3. :meth:`~Generations.commit` (the run finished), :meth:`~Generations.fail` (a cell failed: a new
   generation of the current set plus the failed run's files under failed names) or
   :meth:`~Generations.abort` (stopped, disk full, kernel dead: the generation is removed). Commit and
   fail fsync the new set, make the links for names it adds, then rename a new
   ``.neutrino-ae.current`` over the old (rename(2): atomic), and remove the old generation.

A kill before the rename leaves the old pointer: readers see the old set (a link made for a new name
dangles, as if absent), and the next run's :meth:`recover` removes the half-made generation. A kill
after it leaves the new pointer: readers see the new set; recovery removes the old generation. There is
no third state, so a set is never mixed (tested by killing at every :func:`step`:
``tests/reliability/test_round4_publish.py``).

:func:`publish_notebook` writes the executed notebook atomically (temp file, fsync, rename) and never
publishes a truncated one.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import shutil
import signal
from collections.abc import Callable, Iterable
from pathlib import Path

from neutrino_ae.atomic import write_text
from neutrino_ae.errors import NeutrinoAEError
from neutrino_ae.escape import md_code

#: The folder an older version kept the previous set in while it ran (adopted, then removed).
PREVIOUS_DIR = ".neutrino-ae.previous"
GEN_PREFIX = ".neutrino-ae.gen-"
CURRENT = ".neutrino-ae.current"
#: Our links point through this (``<name> -> .neutrino-ae.current/<name>``).
LINK_PREFIX = CURRENT + "/"
TOP_LEVEL = ("summary.json", "summary.md", "verdict.json")
#: Where a failed run's summary and verdict go (its notebook: :func:`failed_name`).
FAILED_NAMES = {"summary.json": "summary.failed.json", "summary.md": "summary.failed.md",
                "verdict.json": "verdict.failed.json"}
#: The key in a failed run's notebook metadata that says why it failed (``make report`` refuses it).
FAILED_KEY = "neutrino_ae_failed"
#: The folder's own files, in no set (logs.LOG_NAME, run/lock.LOCK_NAME).
OWN_NAMES = frozenset({"run.log", ".neutrino-ae.lock"})
#: A section folder holds this record (report/command/layout.RECORD): how an adopted folder is known.
SECTION_RECORD = "section-run.json"
#: Test hook: ``NEUTRINO_AE_KILL_AT=<step>[:<n>]`` SIGKILLs the run at the n-th (default first) pass of
#: :func:`step` ``<step>``: the fault tests kill a real run between two publish operations.
KILL_ENV = "NEUTRINO_AE_KILL_AT"
_passes: dict[str, int] = {}


def _kill_if_asked(name: str) -> None:
    want = os.environ.get(KILL_ENV)
    if not want:
        return
    at, _, nth = want.partition(":")
    if at != name:
        return
    _passes[name] = _passes.get(name, 0) + 1
    if _passes[name] == int(nth or 1):
        os.kill(os.getpid(), signal.SIGKILL)


#: Called at every step; the in-process fault test replaces it.
hook: Callable[[str], None] = _kill_if_asked


def step(name: str) -> None:
    """A point between two publish operations, where a kill must leave one consistent set."""
    hook(name)


def failed_name(notebook_name: str) -> str:
    """``static.executed.ipynb`` -> ``static.failed.ipynb``: where a failed run's notebook goes."""
    return notebook_name.removesuffix(".ipynb").removesuffix(".executed") + ".failed.ipynb"


def public_dir(output_dir: str | os.PathLike[str]) -> Path:
    """The output folder a kernel's ``output_dir`` belongs to: its parent for a generation (where the lock
    and ``run.log`` are), else itself."""
    p = Path(output_dir)
    return p.parent if p.name.startswith(GEN_PREFIX) else p


def _exchange(a: Path, b: Path) -> bool:
    """Swap the names ``a`` and ``b`` atomically (Linux ``renameat2(RENAME_EXCHANGE)``); False where the
    system or the file system cannot."""
    import ctypes

    try:
        renameat2 = ctypes.CDLL(None, use_errno=True).renameat2  # this process's libc (glibc 2.28+)
    except (OSError, AttributeError):
        return False
    at_fdcwd, rename_exchange = -100, 2
    return renameat2(at_fdcwd, os.fsencode(a), at_fdcwd, os.fsencode(b), rename_exchange) == 0


def published_set(out_dir: str | os.PathLike[str]) -> Path:
    """The folder holding ``out_dir``'s published set: its current generation, else ``out_dir`` itself."""
    cur = Generations(Path(out_dir), "").current()
    return cur if cur is not None else Path(out_dir)


def _fsync_dir(path: Path) -> None:
    with contextlib.suppress(OSError):
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def _remove(path: Path) -> None:
    if path.is_symlink() or path.is_file():
        path.unlink(missing_ok=True)
    elif path.is_dir():
        shutil.rmtree(path, ignore_errors=True)


def _link_tree(src: Path, dst: Path, names: Iterable[str] | None = None) -> None:
    """Hard links of every regular file under ``src`` (or of its entries ``names``) at the same places under
    ``dst`` (a copy where the file system has no hard links). Symbolic links are never followed or copied."""
    dst.mkdir(exist_ok=True)
    for name in sorted(names if names is not None else os.listdir(src)):
        s, d = src / name, dst / name
        if s.is_symlink():
            continue
        if s.is_dir():
            _link_tree(s, d)
        elif s.is_file():
            d.unlink(missing_ok=True)
            try:
                os.link(s, d, follow_symlinks=False)
            except OSError:
                shutil.copy2(s, d, follow_symlinks=False)


def _fsync_tree(root: Path) -> None:
    """The new set's files and folders on disk before the pointer names it."""
    for dirpath, _dirs, files in os.walk(root):
        for f in files:
            with contextlib.suppress(OSError):
                fd = os.open(os.path.join(dirpath, f), os.O_RDONLY | os.O_NOFOLLOW)
                try:
                    os.fsync(fd)
                finally:
                    os.close(fd)
        _fsync_dir(Path(dirpath))


class Generations:
    """The published sets of ``out_dir`` (call only while holding its lock)."""

    def __init__(self, out_dir: Path, notebook_name: str) -> None:
        self.out_dir = Path(out_dir)
        self.notebook_name = notebook_name
        self.set_names = (*TOP_LEVEL, notebook_name)
        self.failed = {**FAILED_NAMES, notebook_name: failed_name(notebook_name)}

    # ------------------------------------------------------------------------------------- reading
    def current(self) -> Path | None:
        """The published generation: what ``.neutrino-ae.current`` names, when that is one of ours (a link
        to a plain ``.neutrino-ae.gen-*`` name in this folder that is a real folder); else None."""
        try:
            target = os.readlink(self.out_dir / CURRENT)
        except OSError:
            return None
        gen = self.out_dir / target
        if "/" in target or not target.startswith(GEN_PREFIX) or gen.is_symlink() or not gen.is_dir():
            return None
        return gen

    def _is_our_link(self, path: Path) -> bool:
        try:
            return os.readlink(path) == LINK_PREFIX + path.name
        except OSError:
            return False

    def _adoptable(self) -> list[str]:
        """Published names that hold a file or folder of their own instead of our link: the set of a
        folder from before generations, or what a notebook run from Jupyter wrote in place."""
        names = []
        with os.scandir(self.out_dir) as it:
            for e in it:
                if e.name.startswith(".") or e.name in OWN_NAMES or e.is_symlink():
                    continue
                if e.is_file() and (e.name in self.set_names or e.name in self.failed.values()):
                    names.append(e.name)
                elif e.is_dir() and (Path(e.path) / SECTION_RECORD).is_file():
                    names.append(e.name)
        return sorted(names)

    # ------------------------------------------------------------------------------------- the run
    def recover(self) -> None:
        """Settle what a killed run left (the rule in the module docstring), adopting files of our names."""
        self._legacy_previous()
        adopt = self._adoptable()
        if adopt:
            gen = self._new_gen("adopted")
            self._copy_current(gen)
            for name in adopt:  # what is at the published name wins over the generation's copy
                _remove(gen / name)
            step("adopt-link")
            _link_tree(self.out_dir, gen, adopt)
            self._switch(gen, adopt)
        cur = self.current()
        for entry in self.out_dir.iterdir():
            name = entry.name
            moved = name[1:].rsplit(".adopted-", 1)[0] if ".adopted-" in name else None
            if moved and cur is not None and not os.path.lexists(self.out_dir / moved) and (cur / moved).is_dir():
                self._ensure_link(moved)  # killed between moving an adopted folder aside and linking its name
            if name.startswith(GEN_PREFIX) and (cur is None or name != cur.name) and not entry.is_symlink():
                shutil.rmtree(entry, ignore_errors=True)
            elif name.startswith(".") and (".link-" in name or name.startswith(CURRENT + ".tmp-")
                                           or ".adopted-" in name) and not name.startswith(GEN_PREFIX):
                _remove(entry)
        self._drop_dangling()
        step("recovered")

    def begin(self) -> Path:
        """A new generation holding the current set (hard links), for the kernel to write the run's set into."""
        self.recover()
        gen = self._new_gen("run")
        self._copy_current(gen)
        step("begun")
        return gen

    def commit(self, gen: Path) -> None:
        """The run finished: its generation, without a failed run's files, becomes the published set."""
        for name in self.failed.values():
            (gen / name).unlink(missing_ok=True)
        step("failed-files-dropped")
        self._switch(gen)

    def fail(self, gen: Path) -> list[Path]:
        """A cell failed: publish the current set unchanged plus what the failed run made of it under the
        failed names (its notebook, already at its failed name in ``gen``; its summary and verdict where
        they are not the current set's own). Returns the failed files at their published paths."""
        new = self._new_gen("failed")
        cur = self._copy_current(new)
        for name in self.failed.values():
            (new / name).unlink(missing_ok=True)
        step("failed-base")
        moved = []
        for name, failed in self.failed.items():
            src = gen / (failed if name == self.notebook_name else name)
            if src.is_file() and not src.is_symlink() and not _same(src, None if cur is None else cur / name):
                os.replace(src, new / failed)
                moved.append(self.out_dir / failed)
        step("failed-files")
        shutil.rmtree(gen, ignore_errors=True)
        self._switch(new)
        return moved

    def abort(self, gen: Path | None) -> None:
        """The run was stopped or could not finish: nothing is published; its generation goes."""
        if gen is not None:
            shutil.rmtree(gen, ignore_errors=True)

    # ------------------------------------------------------------------------------------- steps
    def _copy_current(self, gen: Path) -> Path | None:
        """Hard links of the published set into ``gen``: the names the folder still links to (one whose link
        was removed, ``rm -r results/static/dmat``, has left the set). Returns the current generation."""
        cur = self.current()
        if cur is not None:
            _link_tree(cur, gen, [e.name for e in cur.iterdir() if self._is_our_link(self.out_dir / e.name)])
        return cur

    def _new_gen(self, why: str) -> Path:
        gen = self.out_dir / f"{GEN_PREFIX}{why}-{os.getpid()}-{secrets.token_hex(4)}"
        gen.mkdir()
        return gen

    def _switch(self, gen: Path, adopted: Iterable[str] = ()) -> None:
        """Publish ``gen``: fsync it, make a link for every name it has, rename the pointer (the commit
        point), turn ``adopted`` names into links, remove the old generation and links to nothing."""
        old = self.current()
        _fsync_tree(gen)
        step("synced")
        names = [e.name for e in gen.iterdir() if not e.name.startswith(".") and e.name not in OWN_NAMES]
        for name in sorted(set(names) - set(adopted)):
            self._ensure_link(name)
            step("linked")
        _fsync_dir(self.out_dir)
        tmp = self.out_dir / f"{CURRENT}.tmp-{os.getpid()}"
        _remove(tmp)
        os.symlink(gen.name, tmp)
        step("pointer-made")
        os.replace(tmp, self.out_dir / CURRENT)  # the commit point
        _fsync_dir(self.out_dir)
        step("switched")
        for name in adopted:  # the same bytes are in ``gen`` now: each name keeps showing them
            self._ensure_link(name, adopted=True)
            step("adopted")
        if old is not None and old != gen:
            shutil.rmtree(old, ignore_errors=True)
        step("old-removed")
        self._drop_dangling()
        step("published")

    def _ensure_link(self, name: str, adopted: bool = False) -> None:
        """``out/<name>`` becomes our link. A link there (ours or not) is replaced, never followed; a file or
        folder only when ``adopted`` (its bytes are in the published set): a folder is moved aside first,
        since a link cannot be renamed over a folder. Anything else is left as it is."""
        path = self.out_dir / name
        if self._is_our_link(path):
            return
        if os.path.lexists(path) and not path.is_symlink() and not adopted:
            return
        tmp = self.out_dir / f".{name}.link-{os.getpid()}"
        _remove(tmp)
        os.symlink(LINK_PREFIX + name, tmp)
        if path.is_dir() and not path.is_symlink():
            if _exchange(tmp, path):  # the folder and the link trade names in one step
                step("exchanged")
                shutil.rmtree(tmp, ignore_errors=True)
                return
            aside = self.out_dir / f".{name}.adopted-{os.getpid()}"
            _remove(aside)
            os.replace(path, aside)  # no renameat2 here: the name is missing until the next line
            step("moved-aside")
        os.replace(tmp, path)
        aside = self.out_dir / f".{name}.adopted-{os.getpid()}"
        if aside.exists():
            shutil.rmtree(aside, ignore_errors=True)

    def _drop_dangling(self) -> None:
        """Links of ours to a name the published set does not have (a failed run's files after a finished
        run, a section the set no longer holds)."""
        cur = self.current()
        for entry in self.out_dir.iterdir():
            if self._is_our_link(entry) and (cur is None or not os.path.lexists(cur / entry.name)):
                entry.unlink(missing_ok=True)

    def _legacy_previous(self) -> None:
        """An older version killed mid-run left ``.neutrino-ae.previous/`` (the set before it). The set at the
        top is whole when its verdict's run id is the notebook's (``run: <id>`` in its output): then it is
        kept; otherwise the kept set is put back. Either way the folder is gone before adoption."""
        keep = self.out_dir / PREVIOUS_DIR
        if not keep.is_dir() or keep.is_symlink():
            return
        if not self._top_is_whole():
            kept = {p.name for p in keep.iterdir()}
            for name in self.set_names:
                target = self.out_dir / name
                if target.is_symlink():
                    continue
                if name in kept:
                    os.replace(keep / name, target)
                else:
                    target.unlink(missing_ok=True)
        shutil.rmtree(keep, ignore_errors=True)

    def _top_is_whole(self) -> bool:
        try:
            verdict = json.loads((self.out_dir / "verdict.json").read_text(encoding="utf-8"))
            notebook = (self.out_dir / self.notebook_name).read_text(encoding="utf-8")
        except (OSError, ValueError):
            return False
        run_id = verdict.get("run_id") if isinstance(verdict, dict) else None
        return isinstance(run_id, str) and bool(run_id) and f"run: {run_id}" in notebook


def _same(a: Path, b: Path | None) -> bool:
    """``a`` is the file kept as ``b`` (a hard link, or a copy with the same bytes)."""
    if b is None:
        return False
    try:
        return os.path.samefile(a, b) or a.read_bytes() == b.read_bytes()
    except OSError:
        return False


def unmask_paths(text: str, gen: Path | None) -> str:
    """``text`` with the generation's folder taken out of every path in it (``results/static/.neutrino-ae.gen-X/
    dmat/fig1.png`` -> ``results/static/dmat/fig1.png``): what the kernel printed names the published paths."""
    if gen is None or not gen.name.startswith(GEN_PREFIX):
        return text
    return text.replace("/" + gen.name, "").replace(gen.name + "/", "")  # a path through it; one relative to it


def unmask_set(gen: Path) -> None:
    """:func:`unmask_paths` in the set's text files the kernel wrote (summary, verdict, section records), before
    it is published. Section results (figures, tables) carry no output path."""
    for path in [*gen.glob("*.json"), *gen.glob("*.md"), *gen.glob(f"*/{SECTION_RECORD}")]:
        if path.is_symlink() or not path.is_file():
            continue
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        if gen.name in text:
            write_text(path, unmask_paths(text, gen))


def publish_notebook(running: Path, final: Path, verdict_cell: object | None = None,
                     failed: str | None = None, gen: Path | None = None) -> Path:
    """Write the notebook saved at ``running`` to ``final`` atomically (with ``verdict_cell`` right
    after the title cell, id ``intro``, when given) and remove ``running``. ``failed``: the run failed
    with this error line: a banner cell saying so goes first and the notebook's metadata records it
    (:data:`FAILED_KEY`), so no report shows it as a result. ``gen``: the generation the kernel wrote
    into, taken out of the paths the notebook shows (:func:`unmask_paths`). A notebook that does not
    read back whole (the disk filled while papermill saved it) is not published:
    :class:`NeutrinoAEError`, or ``DiskFull`` when there is no room to write it."""
    import nbformat

    try:
        nb = nbformat.read(running, as_version=4)
    except (OSError, ValueError) as exc:
        if isinstance(exc, OSError):
            raise
        raise NeutrinoAEError(f"{running}: the executed notebook is incomplete ({exc}); not published") from None
    pm = nb.metadata.get("papermill")
    if isinstance(pm, dict):  # papermill's record of its own paths: the notebook's name, not this machine's folders
        for key in ("input_path", "output_path"):
            if isinstance(pm.get(key), str):
                pm[key] = Path(pm[key]).name if key == "input_path" else final.name
    if verdict_cell is not None:
        at = next((i + 1 for i, c in enumerate(nb.cells) if c.get("id") == "intro"), 0)
        nb.cells.insert(at, verdict_cell)
    if failed is not None:
        nb.metadata[FAILED_KEY] = failed
        nb.cells.insert(0, nbformat.v4.new_markdown_cell(
            f"# RUN FAILED\n\n**This run failed and is not a result:** {md_code(failed)}\n\n"
            "The last good run's notebook, summary and verdict, if any, are unchanged beside this file.\n",
            id="run-failed"))
    write_text(final, unmask_paths(nbformat.writes(nb), gen))
    running.unlink(missing_ok=True)
    return final
