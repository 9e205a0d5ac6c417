"""The ``sipt-lab`` command line: a thin layer over the Python API (one module per subcommand)."""

import sys


def entry_point() -> None:
    """The ``sipt-lab`` console script: :func:`sipt_lab.cli.main.main`, with Ctrl-C while its
    modules still load one line too (exit status 130), as it is once they have."""
    try:
        from sipt_lab.cli.main import main
    except KeyboardInterrupt:
        print("sipt-lab: interrupted", file=sys.stderr)
        sys.exit(130)
    sys.exit(main())
