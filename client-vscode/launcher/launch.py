"""Starts the pimem language server for the VS Code extension without importing anything from a workspace.

The extension runs ``<python> -I -u <extension>/launcher/launch.py serve`` with the extension folder as the
working directory (src/serverLaunch.json). ``-I`` (isolated mode) keeps the current directory, the script's
directory, PYTHON* environment variables and the user's site-packages off ``sys.path``; this script then puts
the extension's own ``bundled/libs`` first, followed by the platform wheels for the running interpreter,
``bundled/platform/<target>/cp3XY`` (scripts/bundle-server.mjs fills both; a package holds one target). An
interpreter of another platform or version finds no such folder and runs without those wheels (orjson and
zstandard are optional; without watchdog the server logs that live watching is off). Without a bundle (a development
checkout), the interpreter must have pimem installed.
"""

import os
import platform
import sys
import sysconfig

# The platform wheels are CPython extension modules (or, for watchdog on Linux and Windows, ctypes code built
# for one OS): another implementation gets none of them.
_MACHINES = {"x86_64": "x64", "amd64": "x64", "arm64": "arm64", "aarch64": "arm64"}


def running_target() -> str | None:
    """The package target (``vsce package --target`` name) whose wheels this interpreter can load, as
    ``linux-x64``; None for an interpreter no package has wheels for."""
    if sys.implementation.name != "cpython" or getattr(sys, "abiflags", "") not in ("",):
        return None   # PyPy, free-threaded (3.13t) or debug builds need wheels of their own ABI
    system = {"linux": "linux", "darwin": "darwin", "win32": "win32"}.get(sys.platform)
    # the interpreter's own architecture (an x64 Python on an arm64 Mac loads x64 wheels), except for a
    # universal2 build, which runs as the machine's
    arch = sysconfig.get_platform().rsplit("-", 1)[-1].lower()
    if arch in ("universal2", "universal", "intel"):
        arch = platform.machine().lower()
    machine = _MACHINES.get(arch)
    return f"{system}-{machine}" if system and machine else None


def platform_libs(bundled: str) -> str | None:
    """The folder of platform wheels for this interpreter in ``bundled`` (when the package has it)."""
    target = running_target()
    if target is None:
        return None
    folder = os.path.join(bundled, "platform", target, f"cp{sys.version_info.major}{sys.version_info.minor}")
    return folder if os.path.isdir(folder) else None


def server_sys_path(current: list[str], libs: str, platform_folder: str | None = None) -> list[str]:
    """``current`` with ``libs`` (when it holds pimem) and then ``platform_folder`` first, and without '' or
    relative entries, which would be resolved against whatever the working directory is."""
    bundled = [libs] if os.path.isfile(os.path.join(libs, "pimem", "__init__.py")) else []
    if bundled and platform_folder is not None:
        bundled.append(platform_folder)
    return bundled + [entry for entry in current if entry and os.path.isabs(entry) and entry not in bundled]


def main() -> int:
    if not sys.flags.isolated:
        sys.stderr.write("pimem: the VS Code launcher must run in isolated mode (python -I)\n")
        return 2
    extension = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    bundled = os.path.join(extension, "bundled")
    sys.path[:] = server_sys_path(sys.path, os.path.join(bundled, "libs"), platform_libs(bundled))
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
