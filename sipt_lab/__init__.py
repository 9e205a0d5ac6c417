"""sipt-lab: a toolkit for studying structure-inducing pre-training (SIPT)."""

__version__ = "0.1.0"
