"""A package's exports loaded on first use (PEP 562), so that importing the package, or a light
module of it such as its ``names``, imports none of the heavy modules behind its exports.

A package's ``__init__`` holds a table of its exported names, each with the module of the package
that defines it, and builds its ``__getattr__`` from that table with :func:`lazy_getattr`.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any


def lazy_getattr(package: str, exports: Mapping[str, str]) -> Callable[[str], Any]:
    """The module ``__getattr__`` of the package named ``package``: a name of ``exports`` is looked
    up in the module ``exports[name]`` of the package (imported then, if not yet), any other name
    raises ``AttributeError`` (so ``from package import submodule`` still imports the
    submodule)."""

    def __getattr__(name: str) -> Any:
        if name not in exports:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        return getattr(importlib.import_module(f"{package}.{exports[name]}"), name)

    return __getattr__
