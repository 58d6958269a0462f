"""Starts the pimem language server for the VS Code extension without importing anything from a workspace.

The extension runs ``<python> -I -u <extension>/launcher/launch.py serve`` with the extension folder as the
working directory (src/serverLaunch.json). ``-I`` (isolated mode) keeps the current directory, the script's
directory, PYTHON* environment variables and the user's site-packages off ``sys.path``; this script then puts
the extension's own ``bundled/libs`` first. Without a bundle (a development checkout), the interpreter must
have pimem installed.
"""

import os
import sys


def server_sys_path(current: list[str], libs: str) -> list[str]:
    """``current`` with ``libs`` first (when it holds pimem) and without '' or relative entries, which would
    be resolved against whatever the working directory is."""
    bundled = [libs] if os.path.isfile(os.path.join(libs, "pimem", "__init__.py")) else []
    return bundled + [entry for entry in current if entry and os.path.isabs(entry) and entry not in bundled]


def main() -> int:
    if not sys.flags.isolated:
        sys.stderr.write("pimem: the VS Code launcher must run in isolated mode (python -I)\n")
        return 2
    extension = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    sys.path[:] = server_sys_path(sys.path, os.path.join(extension, "bundled", "libs"))
    try:
        from pimem.cli import main as pimem_main
    except ImportError as error:
        sys.stderr.write(f"pimem: the server cannot be imported ({error}): the extension has no bundled/libs and "
                         "this interpreter has no pimem installed\n")
        return 1
    return pimem_main(sys.argv[1:])


# The guard matters: sync's worker processes (multiprocessing "spawn") run this file again as __mp_main__.
if __name__ == "__main__":
    sys.exit(main())
