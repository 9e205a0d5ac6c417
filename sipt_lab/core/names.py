"""The names of sipt-lab's registries and choices, importable without torch or scikit-learn.

The CLI's parsers list them (``sipt-lab --help`` stays fast), and the registries are built on them
(``dict(zip(NAMES, entries, strict=True))``), so each list is written once.
"""

#: ``--init`` of a fresh character transformer (:class:`sipt_lab.models.CharInit`).
CHAR_INIT = "char"
#: Structure-inducing losses (:data:`sipt_lab.objectives.structure.STRUCTURE_LOSSES`).
STRUCTURE_LOSSES = ("contrastive", "multisim", "infonce")
#: Each structure-inducing loss's parameters with their defaults: the one place the margins are set
#: (the loss functions of :mod:`sipt_lab.objectives.structure` take their defaults from here; a
#: run's ``loss_params`` override them one key at a time). The original code's: contrastive
#: µ+ = 0, µ− = 10; multi-similarity w+ = w− = 1, t = 0.1; InfoNCE τ = 0.05.
LOSS_PARAMETERS: dict[str, dict[str, float]] = dict(
    zip(
        STRUCTURE_LOSSES,
        (
            {"pos_margin": 0.0, "neg_margin": 10.0},
            {"w_pos": 1.0, "w_neg": 1.0, "t": 0.1},
            {"temperature": 0.05},
        ),
        strict=True,
    )
)
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
#: Link-retrieval metrics (:func:`sipt_lab.evaluation.link_retrieval_metrics`); ``lambda-sweep`` chooses by one.
RETRIEVAL_METRICS = ("mrr", "lrap", "ndcg", "ap")
#: ``lambda-sweep``'s default values of λ_SI: the paper's grid (Tables 9-10) with the LM baseline 0.
LAMBDA_GRID = (0.0, 0.01, 0.1, 0.5, 0.9)
#: Which tokens are masked together (:data:`sipt_lab.training.sampler.MASK_UNITS`).
MASK_UNITS = ("token", "word")
#: Vocabularies of a fresh encoder (:data:`sipt_lab.models.subword.TOKENIZER_KINDS`).
TOKENIZERS = ("char", "bpe")
#: Per-sample baselines: the per-token objective plus a supervised objective on each sample's own
#: pre-training labels (:mod:`sipt_lab.training.per_sample`).
PER_SAMPLE_METHODS = ("multitask", "same-family")
#: Pre-training methods (:data:`sipt_lab.training.methods.METHODS`).
METHODS = ("lm", "sipt", "linkbert", "mlsm", "lsm15", "lsm", *PER_SAMPLE_METHODS)
#: LinkBERT's document relations, in the order of its DRP head's classes
#: (:data:`sipt_lab.training.segment_pairs.RELATIONS`).
RELATIONS = ("contiguous", "random", "linked")
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
#: Per-sample pooling of a Hugging Face encoder.
POOLINGS = ("cls", "mean")
#: Char encoder sizes (:data:`sipt_lab.models.encoder.ENCODER_PRESETS`).
ENCODER_PRESETS = ("default", "paper-small", "paper-manifolds")
#: Training presets of ``simulate`` / ``figures`` (:data:`sipt_lab.studies.simulation.presets.TRAINING_PRESETS`).
SIMULATION_PRESETS = ("default", "paper")
#: Task kinds labelled per token (TAPE's secondary structure) or per residue pair (its contact
#: maps): domain tasks only, since ``sipt-lab finetune --labels`` files hold one label per sample.
PER_TOKEN_TASK_KINDS = ("token-classification", "contact-prediction")
#: Fine-tuning task kinds (:data:`sipt_lab.data.tasks.TASK_KINDS`).
TASK_KINDS = ("classification", "classification-f1", "regression", "multilabel", *PER_TOKEN_TASK_KINDS)
#: What ``sipt-lab finetune`` runs (:data:`sipt_lab.jobs.finetune.MODES`).
FINETUNE_MODES = ("probe", "full", "both")
#: Budgets of ``sipt-lab domain run`` (:data:`sipt_lab.studies.domain.presets.PRESETS`).
DOMAIN_PRESETS = ("cpu", "full")
#: Datasets of ``sipt-lab data`` whose every file has a pinned SHA-256
#: (:data:`sipt_lab.domains.datasets.DATASETS`); the others' sources publish no checksum.
PINNED_DATASETS: tuple[str, ...] = ()
#: How ``sipt_lab.graphs.consistency`` scores a node whose label ties for its neighbours' plurality.
TIE_POLICIES = ("split", "strict", "lenient")
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
