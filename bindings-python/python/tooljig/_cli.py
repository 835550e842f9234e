"""The ``tooljig`` command line (docs/operators.md), the same as the Rust binary's:
``tooljig pending``, ``tooljig approve ID --as alice``, ``tooljig audit verify``, ..."""

from __future__ import annotations

import sys

from tooljig import _native


def main() -> None:
    """Runs the command line with this process's arguments and exits with its code."""
    sys.exit(_native.cli(["tooljig", *sys.argv[1:]]))


if __name__ == "__main__":
    main()
