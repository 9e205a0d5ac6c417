"""The names of the studies' choices (presets, the LC-transfer study's metrics and protocols),
importable without torch or scikit-learn.

The CLI's parsers list them (``sipt-lab --help`` stays fast), and the studies' tables are built on
them, so each list is written once.
"""

#: Training presets of ``simulate`` / ``figures`` (:data:`sipt_lab.studies.simulation.presets.TRAINING_PRESETS`).
SIMULATION_PRESETS = ("default", "paper")
#: Budgets of ``sipt-lab domain run`` (:data:`sipt_lab.studies.domain.presets.PRESETS`).
DOMAIN_PRESETS = ("cpu", "full")
#: Metrics of the LC-transfer study on never-seen samples (:func:`sipt_lab.evaluation.heldout.heldout_metrics`).
STUDY_METRICS = (
    "knn_accuracy",
    "knn_auroc",
    "probe_accuracy",
    "probe_macro_f1",
    "finetune_accuracy",
    "finetune_macro_f1",
)
#: Whether the LC-transfer study's fine-tuning samples are pre-training nodes too.
STUDY_PROTOCOLS = ("inductive", "transductive")
