"""A run's kernel listens on Unix sockets in a private folder, so no other process can take its port first
(the "Address already in use" kernel death of two runs starting at once, run/kernel_sockets.py)."""

from __future__ import annotations

import json
import os
import stat
import tempfile
from pathlib import Path

import pytest

from neutrino_ae import cli
from neutrino_ae.run.kernel_sockets import MAX_SOCKET_PATH, kernel_sockets
from tests.run.test_cli import make_notebook

CONNECTION = (
    "import json, os, pathlib\n"
    "from ipykernel.connect import get_connection_info\n"
    "info = json.loads(get_connection_info())\n"
    "folder = os.path.dirname(info['ip'])\n"
    "info['folder_mode'] = os.stat(folder).st_mode if info['transport'] == 'ipc' else None\n"
    "pathlib.Path(output_dir, 'connection.json').write_text(json.dumps(info))\n"
)


@pytest.mark.skipif(os.name != "posix", reason="Unix sockets: POSIX only (elsewhere the kernel keeps TCP)")
def test_the_kernel_listens_on_private_unix_sockets_removed_after_the_run(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    nb = make_notebook(tmp_path / "nb.ipynb", CONNECTION)
    out = tmp_path / "out"
    assert cli.main(["run", "static", "--notebook", str(nb), "--output-dir", str(out)]) == 0, capsys.readouterr().err
    info = json.loads((out / "connection.json").read_text())
    assert info["transport"] == "ipc"
    folder = Path(info["ip"]).parent
    assert folder.is_absolute() and folder.parent == Path(tempfile.gettempdir()).resolve()
    assert stat.S_IMODE(info["folder_mode"]) == 0o700  # only this user can connect
    assert not folder.exists()  # removed with the run


def test_a_temporary_folder_too_deep_for_a_socket_path_keeps_tcp(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    deep = tmp_path / ("d" * (MAX_SOCKET_PATH + 1))
    deep.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(deep))
    with kernel_sockets() as options:
        assert options == {}
        made = list(deep.iterdir())
    assert len(made) == 1 and not made[0].exists()  # its folder is still removed


@pytest.mark.skipif(os.name != "posix", reason="Unix sockets: POSIX only")
def test_each_run_gets_a_folder_of_its_own(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    with kernel_sockets() as first, kernel_sockets() as second:
        ips = [o["config"].KernelManager.ip for o in (first, second)]
        assert all(o["config"].KernelManager.transport == "ipc" for o in (first, second))
        assert ips[0] != ips[1] and all(Path(ip).parent.parent == tmp_path for ip in ips)
    assert list(tmp_path.iterdir()) == []
