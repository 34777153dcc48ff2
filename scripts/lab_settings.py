"""JupyterLab as learners meet it in `make lab`: nbgrader, among the pins for instructors' command line,
shows no menu, panel or server route there.

``lab_settings.py PREFIX`` writes the settings under ``PREFIX/etc/jupyter`` (the environment's own, as
``jupyter labextension disable --level=sys_prefix`` and ``jupyter server extension disable --sys-prefix``
write them), through the same config managers those commands use, without their start-up time.
"""
from __future__ import annotations

import sys
from pathlib import Path

from jupyter_server.config_manager import BaseJSONConfigManager
from jupyter_server.extension.config import ExtensionConfigManager

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


if __name__ == "__main__":
    main(sys.argv[1])
