"""The names of local consistency's tie policies, importable without numba.

The CLI's parser lists them, and :mod:`sipt_lab.graphs.consistency_kernel` checks a policy against
them, so the list is written once.
"""

#: How ``sipt_lab.graphs.consistency`` scores a node whose label ties for its neighbours' plurality
#: (:data:`sipt_lab.graphs.consistency_kernel.TIE_POLICIES`).
TIE_POLICIES = ("split", "strict", "lenient")
