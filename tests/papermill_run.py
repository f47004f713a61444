"""papermill as the tests call it directly: the kernel on private Unix sockets, as `neutrino-ae run` starts it
(neutrino_ae/run/kernel_sockets.py), so two kernels starting at once under xdist cannot clash on a TCP port."""

from __future__ import annotations

from typing import Any

import papermill

from neutrino_ae.run.kernel_sockets import kernel_sockets


def execute_notebook(*args: Any, **kwargs: Any) -> Any:
    """``papermill.execute_notebook`` with the kernel's sockets in a private folder."""
    with kernel_sockets() as sockets:
        return papermill.execute_notebook(*args, **kwargs, **sockets)
