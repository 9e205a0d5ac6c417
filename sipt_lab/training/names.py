"""The names of training's choices (batches, masking, methods, precision, schedules, the
evaluations during pre-training), importable without torch.

The CLI's parsers list them (``sipt-lab --help`` stays fast), and the registries of
:mod:`sipt_lab.training` are built on them (``dict(zip(NAMES, entries, strict=True))``), so each
list is written once.
"""

#: How a seed's non-neighbour is drawn (:data:`sipt_lab.training.sampler.NEGATIVE_SAMPLERS`).
NEGATIVE_SAMPLERS = ("uniform", "two-hop", "same-component")
#: Which vector ``L_SI`` trains on (:func:`sipt_lab.training.train_config.si_normalizes`): the one the
#: encoder outputs (L2-normalised when the checkpoint's pipeline normalises), always the
#: L2-normalised pooled vector, or always the raw pooled vector.
SI_GEOMETRIES = ("output", "normalised", "raw")
#: Pairs ``L_SI`` scores (:data:`sipt_lab.training.sampler.PAIR_MODES`).
PAIR_MODES = ("sampled", "batch")
#: What a token chosen for MLM becomes (:data:`sipt_lab.training.sampler.MASK_REPLACEMENTS`).
MASK_REPLACEMENTS = ("mask", "bert", "keep")
#: Which tokens are masked together (:data:`sipt_lab.training.sampler.MASK_UNITS`).
MASK_UNITS = ("token", "word")
#: Per-sample baselines: the per-token objective plus a supervised objective on each sample's own
#: pre-training labels (:mod:`sipt_lab.training.per_sample`).
PER_SAMPLE_METHODS = ("multitask", "same-family")
#: Pre-training methods (:data:`sipt_lab.training.methods.METHODS`).
METHODS = ("lm", "sipt", "linkbert", "mlsm", "lsm15", "lsm", *PER_SAMPLE_METHODS)
#: Autocast precisions (:func:`sipt_lab.training.runtime.autocast_dtype`).
PRECISIONS = ("auto", "fp32", "bf16", "fp16")
#: How a batched training runs its stacked encoders (:mod:`sipt_lab.training.stacked_step`): eagerly,
#: through ``torch.compile``, or each whole optimiser step recorded as a CUDA graph and replayed
#: (:mod:`sipt_lab.training.recorded_steps`, CUDA only); ``auto``: ``cudagraphs`` where it applies, else eager.
COMPILE_MODES = ("auto", "none", "compile", "cudagraphs")
#: Metrics of the evaluations during pre-training (:mod:`sipt_lab.jobs.pretrain_watch`), all
#: higher-is-better: link retrieval of ``G_PT`` and, with labels, LOO 3-NN AUROC and accuracy and the
#: labels' local consistency over the embedding's own 3-NN graph.
EVAL_METRICS = ("link_mrr", "link_lrap", "loo_3nn_auroc", "loo_3nn_accuracy", "knn_lc")
#: Those of :data:`EVAL_METRICS` that need labels.
LABEL_METRICS = ("loo_3nn_auroc", "loo_3nn_accuracy", "knn_lc")
#: Where a pre-training run logs besides its ``history.csv``: TensorBoard event files (and CSV
#: files), CSV files only, or nothing more.
REPORT_TO = ("tensorboard", "csv", "none")
#: Learning-rate schedules (:data:`sipt_lab.training.train_config.LR_SCHEDULES`).
LR_SCHEDULES = ("constant", "linear", "cosine")
