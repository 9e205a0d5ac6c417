"""The table of domains: every domain by name, declared once.

Each domain module defines its :class:`~sipt_lab.domains.base.Domain` as data; this module gathers
them. A new domain is one more entry here.
"""

from __future__ import annotations

from sipt_lab.core.errors import SiptError
from sipt_lab.domains import abstracts, networks, proteins, wiki
from sipt_lab.domains.base import Domain

#: Domain name -> :class:`~sipt_lab.domains.base.Domain`, in listing order.
DOMAINS: dict[str, Domain] = {
    domain.name: domain for domain in (abstracts.ABSTRACTS, networks.NETWORKS, proteins.PROTEINS, wiki.WIKI)
}


def get_domain(name: str) -> Domain:
    """The domain ``name``; SiptError naming the choices otherwise."""
    try:
        return DOMAINS[name]
    except KeyError:
        raise SiptError(f"unknown domain {name!r}; choose one of: {', '.join(domain_names())}") from None


def domain_names() -> list[str]:
    return list(DOMAINS)
