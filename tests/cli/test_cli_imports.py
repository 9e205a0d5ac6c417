"""The parser is light (no torch / scikit-learn / transformers), and its lists are the registries'."""

import subprocess
import sys
from pathlib import Path

import sipt_lab
from sipt_lab.data import names as data_names
from sipt_lab.jobs import names as job_names
from sipt_lab.models import names as model_names
from sipt_lab.objectives import names as objective_names
from sipt_lab.studies import names as study_names
from sipt_lab.training import names as training_names

PACKAGE = Path(sipt_lab.__file__).parent


def test_building_the_parser_imports_no_heavy_library():
    code = (
        "import sys, sipt_lab.cli.main as m; m.build_parser(); "
        "print(' '.join(k for k in ('torch', 'sklearn', 'transformers') if k in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == ""


def test_name_tables_import_no_heavy_library():
    """Each package's ``names`` module (what the parsers read) loads without torch, scikit-learn,
    transformers or numba, although most of the packages beside them need one."""
    tables = sorted(f"sipt_lab.{path.parent.name}.names" for path in PACKAGE.glob("*/names.py"))
    assert len(tables) >= 8
    code = (
        f"import sys; [__import__(name) for name in {tables!r}]; "
        "print(' '.join(k for k in ('torch', 'sklearn', 'transformers', 'numba') if k in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == ""


def test_light_names_are_the_registries_keys():
    from sipt_lab.data.tasks import TASK_KINDS
    from sipt_lab.jobs.finetune import MODES
    from sipt_lab.models import ENCODER_PRESETS
    from sipt_lab.objectives.structure import STRUCTURE_LOSSES
    from sipt_lab.studies.domain.presets import PRESETS
    from sipt_lab.training.sampler import PAIR_MODES
    from sipt_lab.training.train_config import LR_SCHEDULES

    assert tuple(TASK_KINDS) == data_names.TASK_KINDS  # TaskKind carries its own name
    assert tuple(k for k, kind in TASK_KINDS.items() if kind.per_token) == data_names.PER_TOKEN_TASK_KINDS
    for registry, light in (
        (PRESETS, study_names.DOMAIN_PRESETS),
        (MODES, job_names.FINETUNE_MODES),
        (ENCODER_PRESETS, model_names.ENCODER_PRESETS),
        (STRUCTURE_LOSSES, objective_names.STRUCTURE_LOSSES),
        (PAIR_MODES, training_names.PAIR_MODES),
        (LR_SCHEDULES, training_names.LR_SCHEDULES),
    ):
        assert tuple(registry) == light
