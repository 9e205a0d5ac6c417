"""The ``sipt-lab`` command line: a thin layer over the Python API (one module per subcommand)."""
