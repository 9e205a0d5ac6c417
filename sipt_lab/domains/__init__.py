"""Real domains for pre-training and fine-tuning: samples, tasks and ``G_PT`` builders by name.

What a domain is: :mod:`~sipt_lab.domains.base`; the table of domains: :mod:`~sipt_lab.domains.registry`;
built in: ``abstracts``, ``networks``, ``proteins``, ``wiki`` (one module each).

The names below load on first use (PEP 562), so that reading :mod:`sipt_lab.domains.names` (which
the CLI's parser does) imports no torch or scikit-learn.
"""

from sipt_lab.core.exports import lazy_getattr

#: Exported name -> the module of this package that defines it.
_EXPORTS = {
    "Domain": "base",
    "DomainData": "base",
    "GraphSummary": "base",
    "build_graph": "base",
    "subset": "base",
    "summarize_graph": "base",
    "DOMAINS": "registry",
    "domain_names": "registry",
    "get_domain": "registry",
}

__all__ = sorted(_EXPORTS)

__getattr__ = lazy_getattr(__name__, _EXPORTS)
