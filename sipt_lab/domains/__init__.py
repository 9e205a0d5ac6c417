"""Real domains for pre-training and fine-tuning: samples, tasks and ``G_PT`` builders by name.

What a domain is: :mod:`~sipt_lab.domains.base`; the table of domains: :mod:`~sipt_lab.domains.registry`;
built in: ``abstracts``, ``networks``, ``proteins``, ``wiki`` (one module each).
"""

from sipt_lab.domains.base import (
    Domain,
    DomainData,
    GraphSummary,
    build_graph,
    subset,
    summarize_graph,
)
from sipt_lab.domains.registry import DOMAINS, domain_names, get_domain

__all__ = [
    "DOMAINS",
    "Domain",
    "DomainData",
    "GraphSummary",
    "build_graph",
    "domain_names",
    "get_domain",
    "subset",
    "summarize_graph",
]
