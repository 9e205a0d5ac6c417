"""The names of the jobs' choices (the λ sweep's grid and metrics, fine-tuning's modes), importable
without torch or scikit-learn.

The CLI's parsers list them (``sipt-lab --help`` stays fast), and the jobs' tables are built on
them, so each list is written once.
"""

#: Link-retrieval metrics (:func:`sipt_lab.evaluation.link_retrieval_metrics`); ``lambda-sweep`` chooses by one.
RETRIEVAL_METRICS = ("mrr", "lrap", "ndcg", "ap")
#: ``lambda-sweep``'s default values of λ_SI: the paper's grid (Tables 9-10) with the LM baseline 0.
LAMBDA_GRID = (0.0, 0.01, 0.1, 0.5, 0.9)
#: What ``sipt-lab finetune`` runs (:data:`sipt_lab.jobs.finetune.MODES`).
FINETUNE_MODES = ("probe", "full", "both")
