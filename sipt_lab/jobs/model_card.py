"""The model card of an exported pre-trained model: ``README.md`` with Hugging Face YAML front matter.

:func:`write_model_card` writes it into the model directory that ``sipt-lab pretrain`` exported:
front matter that the Hub and sentence-transformers read (``base_model``, ``license``: the init's
own, ``datasets``: the data files' names, ``library_name``, ``pipeline_tag``, ``tags``; a character
transformer trained from scratch has no base model and no license, and
sipt-lab's own format is ``library_name: sipt-lab``) and a body stating how the model was made: the method, λ_SI and the
structure loss, the graph's size and the labels' local consistency over it, the SHA-256 of the data
files, the steps, the report's numbers before and after pre-training, and how to load it.
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

import yaml

from sipt_lab.core.fileio import write_text_atomic
from sipt_lab.graphs.graph import PretrainingGraph
from sipt_lab.jobs.configs import PretrainJob
from sipt_lab.models import names
from sipt_lab.models.hf_checkpoints import NAMED_CHECKPOINTS, named_checkpoint

#: Hub ids of the named checkpoints (:data:`sipt_lab.models.hf_checkpoints.NAMED_CHECKPOINTS`).
HUB_IDS = {"minilm": "sentence-transformers/all-MiniLM-L6-v2"}
#: Report numbers the card's table shows, with their names there.
CARD_METRICS = {
    "loo_3nn_auroc": "LOO 3-NN AUROC",
    "loo_3nn_accuracy": "LOO 3-NN accuracy",
    "link_mrr": "link MRR",
    "link_lrap": "link LRAP",
    "radius_f1": "radius recovery F1",
    "radius_nn_accuracy": "r-NN accuracy",
}


def base_model(init: str) -> str:
    """The model a run started from: a named checkpoint's Hub id, the ``org/name`` of a directory in
    the Hugging Face cache (``models--org--name/snapshots/...``), else the directory as given."""
    if init in HUB_IDS:
        return HUB_IDS[init]
    match = re.search(r"models--([^/\\]+?)--([^/\\]+)", str(init))
    return f"{match.group(1)}/{match.group(2)}" if match else str(init)


def file_sha256(path: str | Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def data_hashes(job: PretrainJob) -> dict[str, str]:
    """SHA-256 of the job's samples, edges and (when given) labels files."""
    files = {"samples": job.samples, "edges": job.edges, "labels": job.labels}
    return {name: file_sha256(path) for name, path in files.items() if path}


def init_license(init: str) -> str | None:
    """The ``license`` of the init's own model card (its ``README.md`` front matter), None when it
    has none (a character transformer trained from scratch, a directory without a card)."""
    if init == names.CHAR_INIT:
        return None
    directory = named_checkpoint(init) if init in NAMED_CHECKPOINTS else Path(init)
    try:
        text = (directory / "README.md").read_text(encoding="utf-8")
    except OSError:
        return None
    front = re.match(r"---\n(.*?)\n---", text, re.S)
    try:
        fields = yaml.safe_load(front.group(1)) if front else None
    except yaml.YAMLError:
        return None
    value = fields.get("license") if isinstance(fields, dict) else None
    return str(value) if value else None


def model_card(
    job: PretrainJob,
    report: dict,
    graph: PretrainingGraph,
    library: str = "sentence-transformers",
    kept_at: int | None = None,
) -> str:
    """The card's text (see the module docstring) for the model of ``job`` with its ``report``;
    ``library``: the export's format, ``sentence-transformers``, ``transformers`` or ``sipt-lab``
    (a character transformer's); ``kept_at``: the step of a model kept as the best of its run
    (``best/``) rather than the final one."""
    sentence, scratch = library == "sentence-transformers", job.init == names.CHAR_INIT
    license_id = init_license(job.init)
    base = f"a {job.encoder} character transformer" if scratch else base_model(job.init)
    tags = [
        "sipt",
        "sipt-lab",
        "structure-inducing-pre-training",
        *(["sentence-transformers"] if sentence else []),
        "feature-extraction",
    ]
    front = [
        "---",
        *([] if scratch else [f"base_model: {json.dumps(base)}"]),
        *([] if license_id is None else [f"license: {json.dumps(license_id)}"]),
        "datasets:",
        *(f"- {json.dumps(Path(path).name)}" for path in (job.samples, job.edges, job.labels) if path),
        f"library_name: {library}",
        f"pipeline_tag: {'sentence-similarity' if sentence else 'feature-extraction'}",
        "tags:",
        *(f"- {tag}" for tag in tags),
        "---",
    ]
    train = job.train
    method = job.method or ("sipt" if train.lambda_si > 0 else "lm")
    steps = _steps(report, train.steps)
    rows = [
        ("method", method),
        ("λ_SI", f"{train.lambda_si:g}"),
        (
            "loss",
            f"L_PT = (1 − λ_SI)·L_M + λ_SI·L_SI, L_SI {train.loss} "
            f"({', '.join(f'{k}={v:g}' for k, v in sorted(train.loss_params.items())) or 'its defaults'}), "
            f"pairs {train.pairs}",
        ),
        ("pre-training graph", f"{graph.n_nodes:,} samples, {graph.n_edges:,} edges"),
        ("steps", f"{steps:,} (batch {train.batch_size} × {train.grad_accum}, lr {train.lr:g}, {train.schedule})"),
    ]
    if kept_at is not None:
        rows.append(("kept", f"the best {train.keep_best} of the run's evaluations, at step {kept_at:,}"))
    if "local_consistency" in report:
        rows.append(("local consistency of the labels over the graph", f"{report['local_consistency']:.3f}"))
    rows += [(f"SHA-256 of {name}", f"`{digest}`") for name, digest in data_hashes(job).items()]
    made = (
        f"This model is {base} (sipt-lab's `{job.encoder}` size) pre-trained from scratch with sipt-lab"
        if scratch
        else f"This model is [{base}]({_link(base)}) further pre-trained with sipt-lab"
    )
    body = [
        f"# {base} + SIPT",
        "",
        f"{made} on a graph over its samples: structure-inducing pre-training (SIPT), a "
        "masked-language-model loss plus a loss that pulls samples linked in the graph together in the "
        "embedding space.",
        "",
        "| | |",
        "|---|---|",
        *(f"| {name} | {value} |" for name, value in rows),
    ]
    if "before" in report and "after" in report:
        body += [
            "",
            f"## Before and after pre-training (on {report.get('report_samples', graph.n_nodes):,} samples)",
            "",
            "| metric | before | after |",
            "|---|---|---|",
        ]
        body += [
            f"| {label} | {report['before'][key]:.3f} | {report['after'][key]:.3f} |"
            for key, label in CARD_METRICS.items()
            if key in report["before"] and key in report["after"]
        ]
    if library in USAGE:
        body += ["", "## Usage", "", "```python", *USAGE[library], "```"]
    return "\n".join(front + [""] + body) + "\n"


#: How to load an export, by its format (a plain ``transformers`` directory loads as usual).
USAGE = {
    "sentence-transformers": [
        "from sentence_transformers import SentenceTransformer",
        "",
        'model = SentenceTransformer("path/to/this/directory")',
        'embeddings = model.encode(["a sample", "another sample"])',
    ],
    "sipt-lab": [
        "from sipt_lab.models import load_pretrained",
        "from sipt_lab.training import embed",
        "",
        'encoder, tokenizer = load_pretrained("path/to/this/directory")',
        'embeddings = embed(encoder, tokenizer, ["a sample", "another sample"])',
    ],
}


def write_model_card(
    directory: str | Path, job: PretrainJob, report: dict, graph: PretrainingGraph, kept_at: int | None = None
) -> Path:
    """Write :func:`model_card` into the exported model ``directory`` as ``README.md`` (its format
    told by its files: ``modules.json`` sentence-transformers, ``encoder.pt`` sipt-lab's own)."""
    directory = Path(directory)
    library = (
        "sentence-transformers"
        if (directory / "modules.json").is_file()
        else "sipt-lab"
        if (directory / "encoder.pt").is_file()
        else "transformers"
    )
    path = directory / "README.md"
    write_text_atomic(path, model_card(job, report, graph, library, kept_at))
    return path


def _steps(report: dict, planned: int) -> int:
    return int(report.get("stopped_at", planned))


def _link(base: str) -> str:
    return f"https://huggingface.co/{base}" if re.fullmatch(r"[\w.-]+/[\w.-]+", base) else base
