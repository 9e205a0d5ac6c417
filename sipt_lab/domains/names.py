"""The names of the pinned datasets of ``sipt-lab data``, importable without the domains' modules.

``sipt-lab data --help`` lists them, and a test holds them equal to the pinned entries of
:data:`sipt_lab.domains.datasets.DATASETS`.
"""

#: Datasets of ``sipt-lab data`` whose every file has a pinned SHA-256
#: (:data:`sipt_lab.domains.datasets.DATASETS`); the others' sources publish no checksum.
PINNED_DATASETS: tuple[str, ...] = ()
