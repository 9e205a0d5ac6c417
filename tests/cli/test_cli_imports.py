"""The parser is light (no torch / scikit-learn / transformers), and its lists are the registries'."""

import subprocess
import sys

from sipt_lab.core import names


def test_building_the_parser_imports_no_heavy_library():
    code = (
        "import sys, sipt_lab.cli.main as m; m.build_parser(); "
        "print(' '.join(k for k in ('torch', 'sklearn', 'transformers') if k in sys.modules))"
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

    assert tuple(TASK_KINDS) == names.TASK_KINDS  # TaskKind carries its own name
    assert tuple(k for k, kind in TASK_KINDS.items() if kind.per_token) == names.PER_TOKEN_TASK_KINDS
    for registry, light in (
        (PRESETS, names.DOMAIN_PRESETS),
        (MODES, names.FINETUNE_MODES),
        (ENCODER_PRESETS, names.ENCODER_PRESETS),
        (STRUCTURE_LOSSES, names.STRUCTURE_LOSSES),
        (PAIR_MODES, names.PAIR_MODES),
        (LR_SCHEDULES, names.LR_SCHEDULES),
    ):
        assert tuple(registry) == light
