"""Where the parts of this Vigil installation are: the ``vigil`` command, the built-in rule plugins,
the ABI/SDK headers and the CMake package for rule authors.

Every installation is laid out as a prefix: ``pip install`` puts the command in the environment's
``bin/``, the plugins in ``lib/vigil/plugins``, the headers in ``include/`` and the CMake package in
``lib/cmake/Vigil``, with this package in the environment's site-packages; ``cmake --install`` does the
same under its prefix; a build tree has ``bin/`` and ``lib/vigil/plugins`` beside ``python/vigil``.
The prefix is the nearest folder above this package that holds ``lib/vigil/plugins``.
"""
from __future__ import annotations

import os
from typing import Optional

__all__ = ["prefix", "executable", "plugin_dir", "include_dir", "cmake_dir"]

_PLUGIN_SUBDIR = os.path.join("lib", "vigil", "plugins")
# site-packages sits at most this deep in a prefix (lib/pythonX.Y/site-packages/vigil).
_MAX_DEPTH = 6


def prefix() -> Optional[str]:
    """The installation's prefix (a venv's root after ``pip install``), or None when this package lies
    outside any installation."""
    here = os.path.dirname(os.path.abspath(__file__))
    for _ in range(_MAX_DEPTH):
        parent = os.path.dirname(here)
        if parent == here:
            break
        here = parent
        if os.path.isdir(os.path.join(here, _PLUGIN_SUBDIR)):
            return here
    return None


def _part(*relative: str) -> Optional[str]:
    root = prefix()
    if root is None:
        return None
    path = os.path.join(root, *relative)
    return path if os.path.exists(path) else None


def executable() -> Optional[str]:
    """The ``vigil`` command of this installation, or None."""
    return _part("bin", "vigil")


def plugin_dir() -> Optional[str]:
    """The built-in rule plugins' folder (what ``vigil evaluate`` and ``vigil.rules.load`` search), or None."""
    return _part(_PLUGIN_SUBDIR)


def include_dir() -> Optional[str]:
    """The ABI and SDK headers' folder (``vigil/abi.h``, ``vigil/sdk/...``), or None (a build tree has none)."""
    path = _part("include")
    return path if path and os.path.exists(os.path.join(path, "vigil", "version.h")) else None


def cmake_dir() -> Optional[str]:
    """The folder holding VigilConfig.cmake, for ``find_package(Vigil 1)``, or None (a build tree has none)."""
    return _part("lib", "cmake", "Vigil") if _part("lib", "cmake", "Vigil", "VigilConfig.cmake") else None
