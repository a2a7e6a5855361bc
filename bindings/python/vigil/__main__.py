"""``python -m vigil``: where this installation's parts are (``--cmakedir`` for rule authors, as
``python -m pybind11 --cmakedir``), or, given a command, the ``vigil`` program itself
(``python -m vigil rules`` is ``vigil rules``)."""
import argparse
import os
import sys

from . import installation


def _print_or_fail(what, path):
    if path is None:
        sys.exit("vigil: this installation has no {} (prefix: {}); install with pip or cmake --install".format(
            what, installation.prefix() or "none found above " + os.path.dirname(os.path.abspath(__file__))))
    print(path)


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if argv and not argv[0].startswith("-"):
        exe = installation.executable()
        if exe is None:
            sys.exit("vigil: this installation has no vigil command")
        os.execv(exe, [exe, *argv])
    parser = argparse.ArgumentParser(
        prog="python -m vigil",
        description="Where this Vigil installation's parts are. Given a command (`python -m vigil rules`), "
                    "runs the vigil program with it.")
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--version", action="store_true", help="the package's version (the ABI's)")
    group.add_argument("--cmakedir", action="store_true",
                       help="the folder of VigilConfig.cmake: give it to CMAKE_PREFIX_PATH or Vigil_DIR, then find_package(Vigil 1)")
    group.add_argument("--includedir", action="store_true", help="the ABI and SDK headers' folder")
    group.add_argument("--plugindir", action="store_true", help="the built-in rule plugins' folder")
    group.add_argument("--executable", action="store_true", help="the vigil program")
    group.add_argument("--prefix", action="store_true", help="the installation's prefix")
    args = parser.parse_args(argv)
    if args.cmakedir:
        _print_or_fail("CMake package", installation.cmake_dir())
    elif args.includedir:
        _print_or_fail("headers", installation.include_dir())
    elif args.plugindir:
        _print_or_fail("plugin folder", installation.plugin_dir())
    elif args.executable:
        _print_or_fail("vigil program", installation.executable())
    elif args.prefix:
        _print_or_fail("prefix", installation.prefix())
    elif args.version:
        from . import __version__
        print(__version__)
    else:
        parser.print_help()
    return 0


if __name__ == "__main__":
    sys.exit(main())
