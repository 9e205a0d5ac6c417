"""The lab notebook: the paper's figures and theory checks (``paper``), the semi-synthetic
simulations (``simulation``), the real-domain runs behind Table 2 (``domain``) and the LC studies,
the LC-transfer study and the natural-graph atlas (``lc``). Each is a few functions over the layers
below, the user's jobs (:mod:`sipt_lab.jobs`) among them."""
