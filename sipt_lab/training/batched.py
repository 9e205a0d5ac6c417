"""Pre-train K same-shaped character encoders at once, each on its own data and with its own λ_SI.

A figure cell trains 2 arms x 3 seeds of one shape; on a CPU such tiny models are overhead-bound,
so :func:`pretrain_batched` trains K of them as one :class:`~sipt_lab.models.stacked.StackedEncoders`
(weights stacked on a model axis, batched matmuls) with one AdamW over the stacked weights (AdamW is
elementwise, so each model's slice moves exactly as its own optimiser would move it). Everything
else is the trainer's own: each run keeps its tokenizer, the LM/SIPT recipe's :class:`GraphBatchSampler` (its graph,
seed, batches and masks), objectives (its ``λ_SI``), its :class:`_Step`'s masking and loss
combination, and the shared lr schedule; the models are initialised as :func:`pretrain` initialises
them. Run ``k`` ends with the numbers :func:`pretrain` gives for it alone, up to float rounding
(tests check losses and parameters), but without checkpoints: a batched run is one unit of work.

Runs that read no graph pairs (the LM arm, ``λ_SI = 0``) with equal texts and configs are one
computation (their seeds and masks depend on the seed and the token lengths only): they are
trained once, and each gets its own copy of the result; a figure's LM arms of one seed at
several noise rates are such runs.

Per step, run ``k``'s encoded rows and masked positions are padded to the largest run's (extra
rows are one [PAD] token long; extra positions read some row's [CLS]) and dropped before its objectives.
"""

from __future__ import annotations

import copy
import dataclasses
import json
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch
from tqdm.auto import tqdm

from sipt_lab.core.config import config_to_dict
from sipt_lab.core.errors import SiptError
from sipt_lab.graphs.graph import PretrainingGraph
from sipt_lab.models import CharInit, EncoderConfig
from sipt_lab.models.stacked import MaskedHead, StackedEncoders
from sipt_lab.objectives import MaskedLM, StructureInducing, linear_masked_lm_loss
from sipt_lab.training.allocator import retain_freed_memory
from sipt_lab.training.recipe import GraphRecipe, RunData
from sipt_lab.training.trainer import PretrainResult, _check_finite, _make_optimizer, _Step, autocast_dtype, replace_masked, resolve_device
from sipt_lab.training.config import TrainConfig, lr_factor

#: The objectives a batched training computes, in the order of a run's terms (build_objectives').
_TERM_KINDS = (MaskedLM, StructureInducing)
#: TrainConfig fields that may differ between the runs of one batched training.
PER_RUN_FIELDS = ("seed", "lambda_si")


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
        raise SiptError(f"batched runs must share their training config except {', '.join(PER_RUN_FIELDS)}; "
                        f"they differ in {', '.join(differing)}")


def pretrain_batched(runs: Sequence[BatchedRun], encoder: EncoderConfig | CharInit, *, progress: bool = True,
                     position: int | None = None) -> list[PretrainResult]:
    """Pre-train one fresh char encoder per run, all at once; results in run order. ``encoder`` is
    its sizes, or a :class:`~sipt_lab.models.CharInit` (sizes and vocabulary kind). ``position``:
    the terminal line of the step bar, for trainings that run side by side (tqdm's ``position``)."""
    if not runs:
        raise SiptError("no runs to train; give at least one")
    check_batchable([run.config for run in runs])
    config = runs[0].config
    device = resolve_device(config.device)
    retain_freed_memory()
    amp_dtype = autocast_dtype(config.precision, device)
    source = encoder if isinstance(encoder, CharInit) else CharInit(encoder)
    steps, samplers, models, tokenizers, owners, trained = [], [], [], [], [], {}
    for index, run in enumerate(runs):
        tokenizer = source.tokenizer(list(run.texts), config.max_len)
        ids, lengths = tokenizer.encode(list(run.texts))
        plan = GraphRecipe().plan(RunData(list(run.texts), run.graph, tokenizer, ids, lengths, run.config, device, source))
        objectives = plan.objectives
        if not all(isinstance(objective, StructureInducing) or (isinstance(objective, MaskedLM) and objective.vocab_size is None)
                   for _, objective in objectives):
            raise SiptError("batched training supports the LM and SIPT objectives (MLM, L_SI) only; train separately")
        step = _Step(torch.as_tensor(ids, device=device), lengths, objectives, device, amp_dtype, tokenizer.mask_id)
        # a run that reads no pairs (LM: λ = 0) never reads its graph: seeds and masks come from its
        # seed and lengths alone, so runs with its texts and config are one computation, trained once
        key = ("graph-free", tuple(run.texts), json.dumps(config_to_dict(run.config), sort_keys=True)) if not step.needs_pairs else index
        owners.append(trained.setdefault(key, len(steps)))
        if owners[-1] < len(steps):
            continue
        steps.append(step)
        samplers.append(plan.sampler)
        with torch.random.fork_rng(devices=[device] if device.type == "cuda" else []):
            torch.manual_seed(run.config.seed)  # as pretrain() initialises it
            model, _ = source.encoder(tokenizer)
        models.append(model.to(device))
        tokenizers.append(tokenizer)
    stacked = StackedEncoders.stack(models)
    on_cuda = device.type == "cuda"
    optimizer = _make_optimizer(stacked.parameters(), config.lr, config.weight_decay, fused=on_cuda, foreach=not on_cuda)
    # a run without L_M (λ = 1) never reads its MLM head: pretrain() leaves it untouched (no gradient,
    # so AdamW skips it), while its stacked slices get zero gradients, which AdamW would still decay
    headless = torch.as_tensor([k for k, step in enumerate(steps) if not step.needs_mlm], dtype=torch.int64, device=device)
    idle = stacked.mlm_head_parameters() if len(headless) else []
    names = [["loss"] + [objective.name for _, objective in step.objectives] + ["lr"] for step in steps]
    history = [torch.full((config.steps, len(n)), float("nan"), device=device) for n in names]
    checked = 0
    with tqdm(total=config.steps, disable=not progress, desc=f"pretrain x{len(models)}", unit="step", position=position) as bar:
        for step in range(config.steps):
            rate = config.lr * lr_factor(config, step)
            for group in optimizer.param_groups:
                group["lr"] = rate
            optimizer.zero_grad(set_to_none=True)
            for micro in range(config.grad_accum):
                batches = [sampler.batch(step * config.grad_accum + micro) for sampler in samplers]
                total, run_values = _losses(stacked, steps, batches, device)
                total.div(config.grad_accum).backward()
                for table, values in zip(history, run_values):
                    table[step, :-1] = values / config.grad_accum if micro == 0 else table[step, :-1] + values / config.grad_accum
            with torch.no_grad():
                kept = [parameter[headless] for parameter in idle]  # advanced indexing: a copy
                optimizer.step()
                for parameter, values in zip(idle, kept):
                    parameter[headless] = values
            for table in history:
                table[step, -1] = rate
            bar.update()
            done = step + 1
            if done % config.log_every == 0 or done == config.steps:
                for table, run_names in zip(history, names):
                    _check_finite(table, checked, done, run_names)
                checked = done
    stacked.unstack(models)
    results = []
    for model, tokenizer, table, run_names in zip(models, tokenizers, history, names):
        model.eval()
        values = table.cpu().double().numpy()
        results.append(PretrainResult(model, tokenizer, {name: values[:, k] for k, name in enumerate(run_names)},
                                      config, source.describe()))
    out, handed = [], set()
    for run, owner in zip(runs, owners):  # each run its own result: a copy where it shared a training
        out.append(dataclasses.replace(copy.deepcopy(results[owner]) if owner in handed else results[owner], config=run.config))
        handed.add(owner)
    return out


def _losses(stacked: StackedEncoders, steps: Sequence[_Step], batches: Sequence, device: torch.device) -> tuple[torch.Tensor, list[torch.Tensor]]:
    """One micro-batch of every run through one stacked forward pass: ``(sum of the runs' losses,
    per run (1 + terms,) detached values)`` (:func:`_objective_terms`)."""
    layouts = [step.layout(batch) for step, batch in zip(steps, batches)]
    n_rows = max(len(nodes) for _, _, nodes, _, _ in layouts)
    width = max(int(step.lengths[nodes].max()) for step, (_, _, nodes, _, _) in zip(steps, layouts))
    ids = torch.zeros((len(steps), n_rows, width), dtype=torch.int64, device=device)
    lengths = np.ones((len(steps), n_rows), dtype=np.int64)
    mask = np.zeros(ids.shape, dtype=bool)
    replacement = np.zeros(ids.shape, dtype=np.int64)
    for k, (step, (_, _, nodes, run_mask, run_replacement)) in enumerate(zip(steps, layouts)):
        own = int(step.lengths[nodes].max())
        ids[k, : len(nodes), :own] = step.inputs.batch(nodes)
        lengths[k, : len(nodes)] = step.lengths[nodes]
        if step.needs_mlm:
            mask[k, : len(nodes), :own] = run_mask[:, :own]
            replacement[k, : len(nodes), :own] = run_replacement[:, :own]
    # every run's masking at once, in each run's own row-major order of its masked positions
    model, rows, columns = np.nonzero(mask)
    counts = np.bincount(model, minlength=len(steps))
    mask_ids = torch.as_tensor(np.array([step.mask_id for step in steps])[model], device=device)
    within = rows * width + columns  # flat index into the run's (n_rows, width) grid
    targets = replace_masked(ids, torch.as_tensor(model * n_rows * width + within, device=device),
                             torch.as_tensor(replacement[model, rows, columns], device=device), mask_ids).split(counts.tolist())
    count = int(counts.max(initial=0))
    # padding reads other rows' [CLS], spread over the rows (keeps the last layer's query grid narrow)
    flat = np.tile(np.arange(count) % n_rows * width, (len(steps), 1))
    flat[model, np.arange(len(model)) - np.repeat(np.cumsum(counts) - counts, counts)] = within
    with steps[0].autocast():
        embeddings, heads = stacked(ids, torch.as_tensor(flat, device=device), lengths, counts.tolist())
        return _objective_terms(steps, batches, embeddings, heads, targets)


def _objective_terms(steps: Sequence[_Step], batches: Sequence, embeddings: torch.Tensor, heads: Sequence[MaskedHead],
                     targets: Sequence[torch.Tensor]) -> tuple[torch.Tensor, list[torch.Tensor]]:
    """Every run's objectives on the stacked pass: ``(sum of the runs' losses, per run (1 + terms,)
    detached values)``, as :meth:`_Step.combine` gives them run by run. A term computed for several
    runs is computed for all of them at once (``L_SI``: :meth:`StructureInducing.per_run`; ``L_M``:
    one fused decoder + cross-entropy per run, over its own vocabulary, :func:`linear_masked_lm_loss`),
    so the objectives cost a few ops, not a few per run."""
    terms = torch.zeros((len(steps), len(_TERM_KINDS)), device=embeddings.device)
    weights = torch.zeros_like(terms)
    total = terms.new_zeros(())
    for column, kind in enumerate(_TERM_KINDS):
        runs = [(k, weight, objective) for k, step in enumerate(steps) for weight, objective in step.objectives if isinstance(objective, kind)]
        if not runs:
            continue
        index = [k for k, _, _ in runs]
        if kind is MaskedLM:
            values = torch.stack([linear_masked_lm_loss(*heads[k], targets[k]) for k in index])
        else:
            values = runs[0][2].per_run(embeddings[index], [batches[k].positive_pairs for k in index],
                                        [batches[k].negative_pairs for k in index])
        run_weights = torch.tensor([weight for _, weight, _ in runs], device=values.device)
        total = total + (run_weights * values).sum()
        terms[index, column] = values.detach().float()
        weights[index, column] = run_weights
    table = torch.cat([(weights * terms).sum(1, keepdim=True), terms], 1)  # a run's absent terms are 0 and not kept
    columns = [[0] + [1 + _TERM_KINDS.index(type(objective)) for _, objective in step.objectives] for step in steps]
    return total, [row[run_columns] for row, run_columns in zip(table, columns)]
