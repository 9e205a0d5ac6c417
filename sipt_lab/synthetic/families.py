"""The table of graph families: every family by name, declared once.

Each family module defines its :class:`~sipt_lab.synthetic.spec.Family` entries as data; this
module gathers them. A new family is one more entry here (or, outside the package, an entry added to
:data:`FAMILIES` before building).
"""

from __future__ import annotations

from sipt_lab.core.errors import SiptError
from sipt_lab.synthetic import cliques, manifold_families, mechanistic
from sipt_lab.synthetic.spec import Family

#: Family name -> :class:`~sipt_lab.synthetic.spec.Family`, in listing order.
FAMILIES: dict[str, Family] = {
    family.name: family for family in (cliques.FAMILY, *manifold_families.FAMILIES, *mechanistic.FAMILIES)
}


def get_family(name: str) -> Family:
    """The family ``name``; SiptError naming the choices otherwise."""
    try:
        return FAMILIES[name]
    except KeyError:
        raise SiptError(f"unknown graph {name!r}; choose one of: {', '.join(family_names())}") from None


def family_names() -> list[str]:
    return list(FAMILIES)
