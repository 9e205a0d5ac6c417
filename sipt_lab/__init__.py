"""sipt-lab: a toolkit for studying structure-inducing pre-training (SIPT).

The Python API runs the same jobs as the ``sipt-lab`` command, on the same config objects (the CLI
builds these configs from its flags and calls these functions):

| command | function | config |
|---|---|---|
| ``consistency`` | ``consistency_report``, ``local_consistency``, ``consistency_from_files`` | a ``PretrainingGraph`` and labels (``load_graph_tsv`` reads both) |
| ``simulate`` | ``simulate`` | ``SimulationConfig``, built by ``simulation_config`` |
| ``pretrain`` | ``run_pretraining`` | ``PretrainJob`` with a ``TrainConfig`` (``train_config``) |
| ``lambda-sweep`` | ``run_lambda_sweep`` | ``LambdaSweep`` |
| ``embed`` | ``embed_samples`` | a model and a samples file |
| ``finetune`` | ``run_finetuning`` | ``FinetuneJob`` with a ``FinetuneConfig`` |
| ``study lc-transfer`` | ``run_lc_transfer`` | ``LcTransferConfig`` |
| ``study atlas`` | ``run_atlas`` | ``AtlasConfig`` (``atlas_preset``) |
| ``advise`` | ``advise`` | ``AdviseConfig`` |

Errors a user can fix raise ``SiptError``; an invalid config field raises its subclass
``ConfigError``, whose message starts with the field (``TrainConfig.steps``).

The names load on first use, so ``import sipt_lab`` (and the CLI's parser) imports no torch or
scikit-learn until a job is asked for. Each function's docstring carries a short example; the
test suite runs them all:

```pycon
>>> import sipt_lab
>>> path = sipt_lab.PretrainingGraph.from_edges([0, 1, 2], [1, 2, 3], n_nodes=4)
>>> sipt_lab.local_consistency(path, ["a", "a", "b", "b"])
0.75

```
"""

import importlib

__version__ = "0.1.0"

#: Public name -> the module that defines it (imported on first use).
_EXPORTS = {
    # consistency
    "PretrainingGraph": "sipt_lab.graphs.graph",
    "ConsistencyReport": "sipt_lab.graphs.consistency",
    "consistency_from_files": "sipt_lab.graphs.consistency",
    "consistency_report": "sipt_lab.graphs.consistency",
    "local_consistency": "sipt_lab.graphs.consistency",
    "local_consistency_per_node": "sipt_lab.graphs.consistency",
    "load_graph_tsv": "sipt_lab.graphs.tsv",
    # simulate
    "SimulationConfig": "sipt_lab.studies.simulation.config",
    "simulation_config": "sipt_lab.studies.simulation.config",
    "simulate": "sipt_lab.studies.simulation.simulate",
    # pretrain, lambda-sweep, embed
    "TrainConfig": "sipt_lab.training.train_config",
    "train_config": "sipt_lab.training.defaults",
    "PretrainJob": "sipt_lab.jobs.configs",
    "PretrainOutcome": "sipt_lab.jobs.pretrain",
    "run_pretraining": "sipt_lab.jobs.pretrain",
    "LambdaSweep": "sipt_lab.jobs.configs",
    "run_lambda_sweep": "sipt_lab.jobs.lambda_sweep",
    "embed_samples": "sipt_lab.jobs.pretrain",
    # finetune
    "FinetuneConfig": "sipt_lab.training.train_config",
    "FinetuneJob": "sipt_lab.jobs.configs",
    "run_finetuning": "sipt_lab.jobs.finetune",
    # study lc-transfer
    "LcTransferConfig": "sipt_lab.studies.lc.config",
    "run_lc_transfer": "sipt_lab.studies.lc.transfer",
    # study atlas, advise
    "AtlasConfig": "sipt_lab.studies.lc.atlas_config",
    "atlas_preset": "sipt_lab.studies.lc.atlas_config",
    "run_atlas": "sipt_lab.studies.lc.atlas",
    "AdviseConfig": "sipt_lab.jobs.advise",
    "advise": "sipt_lab.jobs.advise",
    # errors
    "ConfigError": "sipt_lab.core.errors",
    "SiptError": "sipt_lab.core.errors",
}

__all__ = ["__version__", *sorted(_EXPORTS)]


def __getattr__(name: str):
    if name not in _EXPORTS:
        raise AttributeError(f"module 'sipt_lab' has no attribute {name!r}")
    value = getattr(importlib.import_module(_EXPORTS[name]), name)
    globals()[name] = value  # later look-ups skip this function
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_EXPORTS})
