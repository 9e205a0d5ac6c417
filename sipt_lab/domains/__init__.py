"""Real domains for pre-training and fine-tuning: samples, tasks and ``G_PT`` builders by name
(:mod:`~sipt_lab.domains.registry`); built in: ``wiki`` (:mod:`~sipt_lab.domains.wiki`)."""

from sipt_lab.domains.registry import (
    DOMAINS,
    Domain,
    DomainData,
    GraphSummary,
    build_graph,
    domain_names,
    get_domain,
    register_domain,
    subset,
    summarize_graph,
)

__all__ = [
    "DOMAINS",
    "Domain",
    "DomainData",
    "GraphSummary",
    "build_graph",
    "domain_names",
    "get_domain",
    "register_domain",
    "subset",
    "summarize_graph",
]
