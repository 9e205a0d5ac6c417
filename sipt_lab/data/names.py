"""The names of the fine-tuning task kinds, importable without torch or scikit-learn.

The CLI's parsers list them (``sipt-lab --help`` stays fast), and the registry
:data:`sipt_lab.data.tasks.TASK_KINDS` holds the same names in the same order (tested).
"""

#: Task kinds labelled per token (TAPE's secondary structure) or per residue pair (its contact
#: maps): domain tasks only, since ``sipt-lab finetune --labels`` files hold one label per sample.
PER_TOKEN_TASK_KINDS = ("token-classification", "contact-prediction")
#: Fine-tuning task kinds (:data:`sipt_lab.data.tasks.TASK_KINDS`).
TASK_KINDS = ("classification", "classification-f1", "regression", "multilabel", *PER_TOKEN_TASK_KINDS)
