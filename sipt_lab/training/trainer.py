"""Pre-training, ``L_PT = (1 − λ_SI)·L_M + λ_SI·L_SI``: the front doors of the one training loop.

* :func:`pretrain` trains one encoder on one run's samples and graph: any encoder source (a
  character transformer, a Hugging Face checkpoint, a GIN), any pre-training method
  (:class:`~sipt_lab.training.recipe.Recipe`), checkpoints and resume, data parallelism under
  ``torchrun``. Its step is a :class:`~sipt_lab.training.step.ModelStep`.
* :func:`pretrain_batched` trains K fresh character encoders of one shape at once, one per
  :class:`BatchedRun` (its own samples, graph, seed and ``λ_SI``), as a
  :class:`~sipt_lab.training.stacked_step.StackedStep`: run ``k`` ends with the numbers
  :func:`pretrain` gives for it alone, up to float rounding.

Both build their step, optimiser and samplers and hand them to
:func:`~sipt_lab.training.loop.train`, which does everything else once (schedule, accumulation,
checkpoints, DDP, the non-finite-loss stop, the ``L_SI`` stall guard, progress).

All samples are tokenised once into one padded id tensor; a step gathers its batch's rows in a few
length buckets (each cut to its own longest row), masks the seeds and encodes them
(:class:`~sipt_lab.training.step.RunLoss`). Runs are deterministic on CPU for a given seed: model
init and dropout use a forked torch RNG seeded from ``config.seed``; batches and masks come from
the recipe's sampler (:class:`~sipt_lab.training.sampler.GraphBatchSampler` for LM / SIPT).
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import json
import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch
from torch import nn

from sipt_lab.core.config_io import config_to_dict, save_config
from sipt_lab.core.errors import SiptError
from sipt_lab.core.fileio import write_json_atomic
from sipt_lab.graphs.graph import PretrainingGraph
from sipt_lab.models import CharInit, EncoderConfig, EncoderSource, Tokenizer, save_encoder
from sipt_lab.objectives import Objective
from sipt_lab.training.allocator import retain_freed_memory
from sipt_lab.training.checkpoint import CHECKPOINT_NAME, Checkpoint, run_identity
from sipt_lab.training.head_warmups import HeadWarmups, head_warmup_key
from sipt_lab.training.inputs import TokenRows, encoder_inputs
from sipt_lab.training.loop import fit_heads, train
from sipt_lab.training.own_head import fit_head_on_states
from sipt_lab.training.recipe import GraphRecipe, Recipe, RunData
from sipt_lab.training.runtime import autocast_dtype, distributed_context, local_device, resolve_device
from sipt_lab.training.stacked_step import StackedStep
from sipt_lab.training.step import ModelStep, RunLoss, make_optimizer
from sipt_lab.training.time_estimate import estimate_line
from sipt_lab.training.train_config import TrainConfig, check_structure_geometry, si_normalizes
from sipt_lab.training.watch import WatchFactory

logger = logging.getLogger(__name__)

#: TrainConfig fields that may differ between the runs of one batched training.
PER_RUN_FIELDS = ("seed", "lambda_si")


@dataclass
class PretrainResult:
    """A trained encoder (eval mode, on the training device) with its tokenizer.

    ``history`` maps ``"loss"`` (the weighted total), each computed term (``"mlm"``, ``"si"``) and
    ``"lr"`` to a ``(steps,)`` float64 array of per-step values; ``notes`` are what the encoder
    source reported (e.g. a newly added MLM head); ``objectives`` are the trained objectives by
    name (their own parameters, e.g. LinkBERT's relation head).
    """

    encoder: nn.Module
    tokenizer: Tokenizer
    history: dict[str, np.ndarray]
    config: TrainConfig
    source: dict
    notes: list[str] = field(default_factory=list)
    objectives: dict[str, Objective] = field(default_factory=dict)

    def save(self, directory: str | Path) -> Path:
        """The encoder in its own format (:func:`~sipt_lab.models.save_encoder`) plus
        ``train_config.json`` and ``history.json``."""
        out = save_encoder(self.encoder, self.tokenizer, directory)
        save_config(self.config, out / "train_config.json")
        write_json_atomic(out / "history.json", {k: v.tolist() for k, v in self.history.items()})
        return out


def pretrain(
    texts: list[str],
    graph: PretrainingGraph,
    config: TrainConfig,
    encoder: EncoderConfig | EncoderSource | None = None,
    *,
    checkpoint_dir: str | Path | None = None,
    method: Recipe | None = None,
    watch: WatchFactory | None = None,
    head_warmups: HeadWarmups | None = None,
    estimate_embedded: int | None = None,
) -> PretrainResult:
    """Pre-train an encoder on ``texts`` (node ``i`` of ``graph`` is ``texts[i]``); ``texts`` are the
    samples the source's tokenizer featurises (:func:`~sipt_lab.training.inputs.encoder_inputs`):
    texts, or graphs for a GIN.

    ``encoder`` is where the encoder comes from: an :class:`~sipt_lab.models.EncoderSource`
    (:func:`~sipt_lab.models.encoder_source` turns ``"char"``, ``"minilm"`` or a Hugging Face
    directory into one), or an :class:`EncoderConfig` for a fresh character transformer of that
    size (None: the ``default`` preset).

    With ``checkpoint_dir``, a checkpoint there from an earlier run of the same configuration
    (``steps`` may grow) is resumed, and one is written every ``checkpoint_every`` steps and at the end.
    A non-finite loss stops the run with a SiptError naming the step. A fresh char encoder on a
    CUDA GPU trains as a stack of one with recorded steps (:func:`trains_as_stack_of_one`; it logs
    no time estimate). Under ``torchrun`` the run
    is data parallel (:mod:`sipt_lab.training.loop`; each process's dropout draws differ). ``method``
    is the pre-training method's :class:`~sipt_lab.training.recipe.Recipe` (None: LM / SIPT by
    ``config.lambda_si``; :func:`sipt_lab.training.methods.method_recipe` gives the others).
    ``watch`` builds, from the encoder and its tokenizer, the loop's
    :class:`~sipt_lab.training.watch.Watch` (evaluations, best model, logged scalars).
    ``head_warmups`` keeps the heads fitted by the new-head warm-up: a run that starts as an earlier
    one did (:func:`~sipt_lab.training.head_warmups.head_warmup_key`) copies its head instead of
    fitting it again, with the same result (with its ``on_states``, a run without ``method`` fits
    its MLM head on its samples' frozen token states, encoded once:
    :func:`~sipt_lab.training.own_head.fit_head_on_states`). With ``estimate_embedded`` (samples its caller embeds
    besides training, e.g. for a report), a run that starts afresh logs its estimated time before
    its first step (:mod:`~sipt_lab.training.time_estimate`).
    """
    recipe = method or GraphRecipe()
    source = recipe.encoder_source(CharInit(encoder) if isinstance(encoder, EncoderConfig) else encoder or CharInit())
    check_structure_geometry(config, source)
    device = resolve_device(config.device)
    retain_freed_memory()
    place = distributed_context(device.type)
    if trains_as_stack_of_one(source, device, method=method, watch=watch, processes=place.world):
        (result,) = pretrain_batched([BatchedRun(list(texts), graph, config)], source, checkpoint_dir=checkpoint_dir)
        return result
    device = local_device(device, place)
    if config.batch_size < place.world:
        raise SiptError(
            f"batch_size {config.batch_size} is smaller than the {place.world} processes; give each at least one sample"
        )
    amp_dtype = autocast_dtype(config.precision, device, small=isinstance(source, CharInit))
    began = time.perf_counter()
    tokenizer = source.tokenizer(list(texts), config.max_len)
    inputs = encoder_inputs(tokenizer, list(texts), device)
    tokens = int(np.sum(inputs.lengths))
    logger.debug(f"tokenising: {len(texts)} samples, {tokens:,} tokens in {time.perf_counter() - began:.1f} s")
    ids = inputs.ids.numpy() if isinstance(inputs, TokenRows) else None  # recipes that build their own rows read them
    plan = recipe.plan(RunData(list(texts), graph, tokenizer, ids, inputs.lengths, config, device, source))
    described = source.describe() if method is None else {**source.describe(), "method": recipe.describe()}
    loss = RunLoss(
        inputs,
        None,
        plan.objectives,
        device,
        amp_dtype,
        place=place,
        normalize=si_normalizes(config, source.normalizes),
    )
    cuda_devices = [device] if device.type == "cuda" else []
    checkpoint = (
        None
        if checkpoint_dir is None
        else Checkpoint(
            Path(checkpoint_dir) / CHECKPOINT_NAME,
            run_identity(config, described, tokenizer),
            config.steps,
            cuda_devices,
        )
    )
    with torch.random.fork_rng(devices=cuda_devices):
        torch.manual_seed(config.seed)
        began = time.perf_counter()
        model, notes = source.encoder(tokenizer)
        model = model.to(device)
        size = sum(parameter.numel() for parameter in model.parameters())
        logger.debug(f"loading the encoder: {size:,} parameters on {device} in {time.perf_counter() - began:.1f} s")
        if place.rank:  # identical init everywhere; dropout differs by process
            torch.manual_seed(config.seed * 7919 + place.rank)
        step = ModelStep(model, loss).to(device)
        optimizer = make_optimizer(step.parameters(), config.lr, config.weight_decay, fused=device.type == "cuda")
        watching = None if watch is None else watch(model, tokenizer)
        log = None if watching is None or not place.is_main else watching.log
        mlm = [
            (1.0, objective) for _, objective in plan.objectives if objective.needs_mlm and not objective.needs_pairs
        ]
        mlm_warmup = bool(config.head_warmup and getattr(model, "fresh_head", False) and mlm)
        # a plain LM / SIPT run fits its MLM head on its samples' frozen token states, encoded once
        on_states = mlm_warmup and head_warmups is not None and head_warmups.on_states and method is None
        head_key = head_warmup_key(
            config, {**described, "head_fit": "frozen states"} if on_states else described, texts
        )
        # an objective's own head (LinkBERT's relation head, a per-sample baseline's) is new too:
        # at a warm start's small rate it would barely leave its initial loss, and its term with it
        headed = [(1.0, objective) for _, objective in plan.objectives if list(objective.parameters())]

        def warm_up() -> None:
            if mlm_warmup:
                heads = model.new_head_parameters()
                if on_states:
                    state_loss = RunLoss(inputs, None, mlm, device)
                    fit = functools.partial(fit_head_on_states, model, heads, state_loss, plan.sampler, config, log)
                else:
                    head_step = ModelStep(model, RunLoss(inputs, None, mlm, device, amp_dtype))
                    fit = functools.partial(fit_heads, heads, head_step, plan.sampler, config, "new MLM head", log)
                if head_warmups is None:
                    notes.append(fit())
                else:
                    notes.append(head_warmups.warm_up(head_key, heads, fit, cuda_devices, draws_run_rng=not on_states))
            if config.head_warmup and headed:
                normalize = si_normalizes(config, source.normalizes)
                head_step = ModelStep(model, RunLoss(inputs, None, headed, device, amp_dtype, normalize=normalize))
                heads = [parameter for _, objective in headed for parameter in objective.parameters()]
                what = f"new {' and '.join(objective.name for _, objective in headed)} head"
                notes.append(fit_heads(heads, head_step, plan.sampler, config, what, log))

        if estimate_embedded is not None and place.is_main and (checkpoint is None or not checkpoint.exists()):
            fitted = mlm_warmup and (head_warmups is None or not head_warmups.has(head_key, cuda_devices))
            warmup_steps = config.head_warmup * (int(fitted) + int(bool(headed)))
            first = plan.sampler.batch(0)
            logger.info(estimate_line(model, inputs, device, config, first, warmup_steps, estimate_embedded))

        (history,) = train(
            step,
            [plan.sampler],
            config,
            optimizer,
            place=place,
            checkpoint=checkpoint,
            warm_up=warm_up,
            watch=watching,
        )
    model.eval()
    return PretrainResult(
        model,
        tokenizer,
        history,
        config,
        described,
        notes,
        {objective.name: objective.eval() for _, objective in plan.objectives},
    )


def trains_as_stack_of_one(
    source: EncoderSource, device: torch.device, *, method: Recipe | None, watch: WatchFactory | None, processes: int
) -> bool:
    """Whether :func:`pretrain` trains its model as a stack of one (:func:`pretrain_batched`), whose
    whole steps a CUDA GPU records once per shape and replays: a fresh char encoder without dropout
    on CUDA, in one process, trained by LM / SIPT (no ``method``) with nothing watching. Its eager
    step is bound by kernel launches, not arithmetic; the stack trains the same steps (its
    initialisation, batches and masks are :func:`pretrain`'s)."""
    if device.type != "cuda" or method is not None or watch is not None or processes > 1:
        return False
    return isinstance(source, CharInit) and not (source.config.dropout or source.config.attention_dropout)


@dataclass(frozen=True)
class BatchedRun:
    """One model of a batched training: its samples (node ``i`` of ``graph`` is ``texts[i]``) and
    its config (equal across runs except :data:`PER_RUN_FIELDS`)."""

    texts: list[str]
    graph: PretrainingGraph
    config: TrainConfig


def check_batchable(configs: Sequence[TrainConfig]) -> None:
    """SiptError naming the field when ``configs`` differ in more than :data:`PER_RUN_FIELDS`."""
    shared = [{k: v for k, v in config_to_dict(c).items() if k not in PER_RUN_FIELDS} for c in configs]
    differing = sorted(k for k in shared[0] if any(s[k] != shared[0][k] for s in shared))
    if differing:
        raise SiptError(
            f"batched runs must share their training config except {', '.join(PER_RUN_FIELDS)}; "
            f"they differ in {', '.join(differing)}"
        )


def pretrain_batched(
    runs: Sequence[BatchedRun],
    encoder: EncoderConfig | CharInit,
    *,
    position: int | None = None,
    checkpoint_dir: str | Path | None = None,
    compile: str = "auto",
) -> list[PretrainResult]:
    """Pre-train one fresh char encoder per run, all at once as one stacked model; results in run
    order. ``encoder`` is its sizes, or a :class:`~sipt_lab.models.CharInit` (sizes and vocabulary
    kind); it must have no dropout (the models would share dropout draws). ``position``: the
    terminal line of the step bar, for trainings that run side by side (tqdm's ``position``);
    ``checkpoint_dir``: as :func:`pretrain`'s, for the whole stack; ``compile``: how the stack runs, a
    name in :data:`~sipt_lab.training.names.COMPILE_MODES` (:class:`StackedStep`). Each model is initialised as
    :func:`pretrain` initialises it; the objectives are LM / SIPT's (``config.lambda_si``).

    Runs that read no graph pairs (the LM arm, ``λ_SI = 0``) with equal texts and configs are one
    computation (their seeds and masks depend on the seed and the token lengths only): they are
    trained once, and each gets its own copy of the result.
    """
    stack = stacked_training(runs, encoder, compile)
    step, config, source, configs, tokenizers = (
        stack.step,
        runs[0].config,
        stack.source,
        stack.configs,
        stack.tokenizers,
    )
    checkpoint = None
    if checkpoint_dir is not None:
        identity = {str(k): run_identity(c, source.describe(), t) for k, (c, t) in enumerate(zip(configs, tokenizers))}
        checkpoint = Checkpoint(
            Path(checkpoint_dir) / CHECKPOINT_NAME,
            {"runs": identity},
            config.steps,
            [step.device] if step.device.type == "cuda" else [],
        )
    histories = train(
        step,
        stack.samplers,
        config,
        stack.optimizer,
        checkpoint=checkpoint,
        desc=f"pretrain x{len(stack.models)}",
        position=position,
    )
    step.unstack(stack.models)
    results = []
    for model, tokenizer, history in zip(stack.models, tokenizers, histories):
        results.append(PretrainResult(model.eval(), tokenizer, history, config, source.describe()))
    out, handed = [], set()
    for run, owner in zip(runs, stack.owners):  # each run its own result: a copy where it shared a training
        out.append(
            dataclasses.replace(copy.deepcopy(results[owner]) if owner in handed else results[owner], config=run.config)
        )
        handed.add(owner)
    return out


@dataclass
class StackedTraining:
    """What :func:`pretrain_batched` trains: the stacked step over the distinct models (``models[i]``,
    its ``tokenizers[i]`` and ``configs[i]``, reading ``samplers[i]``), its optimiser, the encoder
    source, and per run the index of the model that trains it (``owners``)."""

    step: StackedStep
    samplers: list
    optimizer: torch.optim.Optimizer
    models: list[nn.Module]
    tokenizers: list[Tokenizer]
    configs: list[TrainConfig]
    owners: list[int]
    source: CharInit


def stacked_training(
    runs: Sequence[BatchedRun], encoder: EncoderConfig | CharInit, compile: str = "auto"
) -> StackedTraining:
    """The stacked step, samplers and optimiser of :func:`pretrain_batched` (its arguments), before
    any step: for callers that drive the steps themselves (benchmarks)."""
    if not runs:
        raise SiptError("no runs to train; give at least one")
    check_batchable([run.config for run in runs])
    config = runs[0].config
    device = resolve_device(config.device)
    retain_freed_memory()
    amp_dtype = autocast_dtype(config.precision, device, small=True)
    source = encoder if isinstance(encoder, CharInit) else CharInit(encoder)
    losses, samplers, models, tokenizers, configs, owners, trained = [], [], [], [], [], [], {}
    for index, run in enumerate(runs):
        tokenizer = source.tokenizer(list(run.texts), config.max_len)
        ids, lengths = tokenizer.encode(list(run.texts))
        plan = GraphRecipe().plan(
            RunData(list(run.texts), run.graph, tokenizer, ids, lengths, run.config, device, source)
        )
        loss = RunLoss(
            torch.as_tensor(ids),  # kept on the host: the stacked step builds each batch there, moved at once
            lengths,
            plan.objectives,
            device,
            amp_dtype,
            tokenizer.mask_id,
            normalize=si_normalizes(run.config, source.normalizes),
        )
        # a run that reads no pairs (LM: λ = 0) never reads its graph: seeds and masks come from its
        # seed and lengths alone, so runs with its texts and config are one computation, trained once
        key = (
            ("graph-free", tuple(run.texts), json.dumps(config_to_dict(run.config), sort_keys=True))
            if not loss.needs_pairs
            else index
        )
        owners.append(trained.setdefault(key, len(losses)))
        if owners[-1] < len(losses):
            continue
        losses.append(loss)
        samplers.append(plan.sampler)
        with torch.random.fork_rng(devices=[device] if device.type == "cuda" else []):
            torch.manual_seed(run.config.seed)  # as pretrain() initialises it
            model, _ = source.encoder(tokenizer)
        models.append(model.to(device))
        tokenizers.append(tokenizer)
        configs.append(run.config)
    step = StackedStep(models, losses, compile=compile)
    on_cuda = device.type == "cuda"
    optimizer = make_optimizer(
        step.parameters(),
        config.lr,
        config.weight_decay,
        fused=on_cuda,
        foreach=not on_cuda,
        capturable=step.records_steps,
    )
    return StackedTraining(step, samplers, optimizer, models, tokenizers, configs, owners, source)
