"""JupyterLab as learners meet it in `make lab`: nbgrader, among the pins for instructors' command line,
shows no menu, panel or server route there. And the environment's kernel spec ``python3`` (the kernel the book's
build, `make lab` and the tests start) starts kernels through ``coursegrader.kernels``: over IPC, not TCP.

``lab_settings.py PREFIX`` writes the settings under ``PREFIX/etc/jupyter`` (the environment's own, as
``jupyter labextension disable --level=sys_prefix`` and ``jupyter server extension disable --sys-prefix``
write them), through the same config managers those commands use, without their start-up time, and the provisioner
into ``PREFIX/share/jupyter/kernels/python3/kernel.json`` (which ``ipykernel install --sys-prefix`` wrote just
before).
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

from jupyter_server.config_manager import BaseJSONConfigManager
from jupyter_server.extension.config import ExtensionConfigManager

from coursegrader.kernels import NAME

LAB_EXTENSION = "@jupyter/nbgrader"
SERVER_EXTENSIONS = ("nbgrader.server_extensions.formgrader", "nbgrader.server_extensions.assignment_list",
                     "nbgrader.server_extensions.course_list", "nbgrader.server_extensions.validate_assignment")


def main(prefix: str) -> None:
    config = Path(prefix) / "etc" / "jupyter"
    # Disabled and locked, so a learner's settings cannot switch the menus back on.
    BaseJSONConfigManager(config_dir=str(config / "labconfig")).update(
        "page_config", {"disabledExtensions": {LAB_EXTENSION: True}, "lockedExtensions": {LAB_EXTENSION: True}})
    server = ExtensionConfigManager(read_config_path=[str(config)],
                                    write_config_dir=str(config / "jupyter_server_config.d"))
    for name in SERVER_EXTENSIONS:
        server.disable(name)
    kernel = Path(prefix) / "share" / "jupyter" / "kernels" / "python3" / "kernel.json"
    spec = json.loads(kernel.read_text(encoding="utf-8"))
    spec.setdefault("metadata", {})["kernel_provisioner"] = {"provisioner_name": NAME, "config": {}}
    kernel.write_text(json.dumps(spec, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main(sys.argv[1])
