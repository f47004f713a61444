"""Where a run's kernel listens: Unix sockets in a private folder of its own, not TCP ports.

jupyter_client picks a kernel's five TCP ports by binding port 0 and letting go; the kernel binds them a
moment later. Any process on the machine can take one of those ports in between (another kernel starting,
any outgoing connection's ephemeral port), and the kernel then dies with "Address already in use" before
the run starts. Seen in 1 of 5 full test runs on 2 cores, two notebook runs starting at once. Unix sockets
in a folder this run made have no such window, and only this user can connect to them (mode 0700).

The folder goes with the run, also when a signal stops it (run/stop.py ends the process without unwinding).

Where the platform has no Unix sockets, or the temporary folder's path is too long for one, the kernel
keeps jupyter_client's TCP default.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from neutrino_ae.run.stop import on_stop

#: The longest socket path allowed: ``sun_path`` holds 108 bytes on Linux and 104 on macOS, with its NUL.
MAX_SOCKET_PATH = 100
#: jupyter_client names each socket ``<ip>-<n>`` with n a small integer; room for it.
_SUFFIX = "-99"


@contextmanager
def kernel_sockets() -> Iterator[dict[str, Any]]:
    """papermill keyword arguments that put the kernel's sockets in a fresh private folder, removed after
    the run; ``{}`` (TCP) where Unix sockets cannot be used."""
    if os.name != "posix":
        yield {}
        return
    from traitlets.config import Config

    folder = tempfile.mkdtemp(prefix="nae-kernel-")
    forget = on_stop(lambda: shutil.rmtree(folder, ignore_errors=True))
    try:
        prefix = os.path.join(folder, "k")
        if len(os.fsencode(prefix + _SUFFIX)) > MAX_SOCKET_PATH:
            yield {}
        else:
            yield {"config": Config({"KernelManager": {"transport": "ipc", "ip": prefix}})}
    finally:
        forget()
        shutil.rmtree(folder, ignore_errors=True)
