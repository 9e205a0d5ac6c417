import csv
import dataclasses
import os
import sys
from pathlib import Path

import numpy as np
import pytest

from sipt_lab.core.config_io import config_hash
from sipt_lab.core.errors import SiptError
from sipt_lab.grid import collect_results, grid, run_grid, summarize, write_results_csv


@dataclasses.dataclass(frozen=True)
class Inner:
    scale: float = 1.0


@dataclasses.dataclass(frozen=True)
class Toy:
    a: int = 1
    b: float = 0.5
    inner: Inner = Inner()
    log_dir: str = ""  # where the cell records its calls (a file, since cells may run in other processes)
    fail_flag: str = ""  # the cell fails half-way while this file exists


def toy_cell(config: Toy) -> dict:
    with open(Path(config.log_dir) / f"calls-{config_hash(config)}", "a") as log:
        log.write("call\n")
    if config.fail_flag and Path(config.fail_flag).exists():
        raise RuntimeError("flag present")
    return {
        "sum": np.float64(config.a + config.b * config.inner.scale),
        "per_seed": [config.a, 2 * config.a],
        "nested": {"x": config.a},
    }


def probe_cell(config: Toy) -> dict:
    import torch

    return {"threads": torch.get_num_threads(), "pid": os.getpid(), "omp": os.environ.get("OMP_NUM_THREADS")}


def calls(config: Toy) -> int:
    path = Path(config.log_dir) / f"calls-{config_hash(config)}"
    return len(path.read_text().splitlines()) if path.exists() else 0


def toy_grid(tmp_path: Path, **changes) -> list[Toy]:
    return grid(Toy(log_dir=str(tmp_path), **changes), a=[1, 2, 3])


def test_grid_is_the_ordered_product_and_reaches_nested_fields():
    configs = grid(Toy(), a=[1, 2], **{"inner.scale": [1.0, 3.0]})
    assert [(c.a, c.inner.scale) for c in configs] == [(1, 1.0), (1, 3.0), (2, 1.0), (2, 3.0)]
    assert all(c.b == 0.5 for c in configs)
    with pytest.raises(SiptError, match="no field 'c'"):
        grid(Toy(), c=[1])
    with pytest.raises(SiptError, match="no field 'depth'"):
        grid(Toy(), **{"inner.depth": [1]})
    with pytest.raises(SiptError, match="non-empty list"):
        grid(Toy(), a=1)


def test_results_land_in_hash_dirs_and_a_rerun_skips(tmp_path):
    configs, root = toy_grid(tmp_path), tmp_path / "runs"
    first = run_grid(toy_cell, configs, root)
    assert [cell.status for cell in first] == ["done"] * 3
    assert [cell.hash for cell in first] == [config_hash(c) for c in configs]
    for cell, a in zip(first, [1, 2, 3]):
        assert sorted(p.name for p in (root / cell.hash).iterdir()) == ["config.json", "result.json"]
        assert cell.result == {"sum": a + 0.5, "per_seed": [a, 2 * a], "nested": {"x": a}}
    second = run_grid(toy_cell, configs, root)
    assert [cell.status for cell in second] == ["skipped"] * 3
    assert [cell.result for cell in second] == [cell.result for cell in first]
    assert [calls(c) for c in configs] == [1, 1, 1]
    assert summarize(first + second) == "6 cells: 3 done, 3 skipped, 0 failed"


def test_a_failing_cell_is_reported_and_only_it_reruns(tmp_path):
    flag = tmp_path / "flag"
    flag.touch()
    configs, root = toy_grid(tmp_path), tmp_path / "runs"
    configs[1] = dataclasses.replace(configs[1], fail_flag=str(flag))
    bad = config_hash(configs[1])

    first = run_grid(toy_cell, configs, root, raise_on_error=False)
    assert [cell.status for cell in first] == ["done", "failed", "done"]
    assert first[1].result is None and "RuntimeError: flag present" in first[1].error
    assert (root / bad / "error.txt").read_text() == first[1].error
    assert not (root / bad / "result.json").exists()
    with pytest.raises(SiptError, match=f"3 cells: 0 done, 2 skipped, 1 failed; failed cell\\(s\\) {bad}"):
        run_grid(toy_cell, configs, root)

    flag.unlink()
    third = run_grid(toy_cell, configs, root)
    assert [cell.status for cell in third] == ["skipped", "done", "skipped"]
    assert not (root / bad / "error.txt").exists()
    assert [calls(c) for c in configs] == [1, 3, 1]


def test_a_cell_killed_mid_write_is_recomputed(tmp_path):
    config, root = Toy(log_dir=str(tmp_path)), tmp_path / "runs"
    cell_dir = root / config_hash(config)
    cell_dir.mkdir(parents=True)
    (cell_dir / "config.json").write_text("{}")
    (cell_dir / ".result.json.x.tmp").write_text('{"sum": ')  # what a kill during the write leaves
    [cell] = run_grid(toy_cell, [config], root)
    assert cell.status == "done" and calls(config) == 1
    assert collect_results(root)[0]["metrics.sum"] == 1.5


def test_a_failed_result_write_leaves_no_result_file(tmp_path, monkeypatch):
    real_replace = os.replace

    def replace(src, dst):
        if Path(dst).name == "result.json":
            raise OSError("disk full")
        real_replace(src, dst)

    monkeypatch.setattr(os, "replace", replace)
    config = Toy(log_dir=str(tmp_path))
    [cell] = run_grid(toy_cell, [config], tmp_path / "runs", raise_on_error=False)
    assert cell.status == "failed" and "OSError: disk full" in cell.error
    assert sorted(p.name for p in (tmp_path / "runs" / cell.hash).iterdir()) == ["config.json", "error.txt"]


def test_bad_arguments_are_user_errors(tmp_path):
    configs = toy_grid(tmp_path)
    with pytest.raises(SiptError, match="module level"):
        run_grid(lambda config: {}, configs, tmp_path)
    with pytest.raises(SiptError, match="unknown executor 'gpu'"):
        run_grid(toy_cell, configs, tmp_path, executor="gpu")
    with pytest.raises(SiptError, match="takes no option\\(s\\) workers; it takes: max_workers"):
        run_grid(toy_cell, configs, tmp_path, executor="local", workers=2)
    with pytest.raises(SiptError, match="repeats configs"):
        run_grid(toy_cell, configs + configs[:1], tmp_path)
    with pytest.raises(SiptError, match="dataclass config instances"):
        run_grid(toy_cell, [{"a": 1}], tmp_path)
    assert not any(tmp_path.iterdir())


def test_a_non_dict_result_fails_the_cell(tmp_path):
    [cell] = run_grid(calls, [Toy(log_dir=str(tmp_path))], tmp_path / "runs", raise_on_error=False)
    assert cell.status == "failed" and "it must return a dict of metrics" in cell.error


@pytest.mark.slow
def test_local_executor_runs_cells_in_single_threaded_worker_processes(tmp_path):
    configs = toy_grid(tmp_path)[:2]
    cells = run_grid(probe_cell, configs, tmp_path / "runs", executor="local")
    assert [cell.status for cell in cells] == ["done", "done"]
    for cell in cells:
        assert cell.result["pid"] != os.getpid()
        assert cell.result["threads"] == 1 and cell.result["omp"] == "1"


def test_slurm_executor_without_submitit_says_how_to_install(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "submitit", None)
    with pytest.raises(SiptError, match='pip install "sipt-lab\\[slurm\\]"'):
        run_grid(toy_cell, toy_grid(tmp_path), tmp_path, executor="slurm")


@pytest.mark.slow
def test_slurm_executor_through_submitits_local_cluster(tmp_path, monkeypatch):
    pytest.importorskip("submitit")
    # submitit's local jobs are fresh interpreters: let them import this module by name.
    module_root = Path(__file__).resolve().parents[__name__.count(".")]
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(module_root), os.environ.get("PYTHONPATH")])))
    configs, root = toy_grid(tmp_path)[:2], tmp_path / "runs"
    cells = run_grid(
        toy_cell,
        configs,
        root,
        executor="slurm",
        cluster="local",
        parameters={"timeout_min": 5, "partition": "ignored-locally"},
        array_parallelism=2,
    )
    assert [(cell.status, cell.result["sum"]) for cell in cells] == [("done", 1.5), ("done", 2.5)]
    assert (root / "_submitit").is_dir()
    assert [row["hash"] for row in collect_results(root)] == sorted(cell.hash for cell in cells)


def test_results_table_has_config_fields_then_metrics(tmp_path):
    configs, root = toy_grid(tmp_path)[:2], tmp_path / "runs"
    run_grid(toy_cell, configs, root)
    (root / "unfinished").mkdir()
    (root / "unfinished" / "config.json").write_text("{}")
    rows = collect_results(root)
    expected = sorted(
        (
            {
                "hash": config_hash(c),
                "config.a": c.a,
                "config.b": 0.5,
                "config.inner.scale": 1.0,
                "config.log_dir": str(tmp_path),
                "config.fail_flag": "",
                "metrics.sum": c.a + 0.5,
                "metrics.per_seed": [c.a, 2 * c.a],
                "metrics.nested.x": c.a,
            }
            for c in configs
        ),
        key=lambda row: row["hash"],
    )
    assert rows == expected

    write_results_csv(rows + [{"hash": "extra", "metrics.other": None}], tmp_path / "table.csv")
    with open(tmp_path / "table.csv", newline="") as handle:
        table = list(csv.reader(handle))
    assert table[0] == [
        "hash",
        "config.a",
        "config.b",
        "config.fail_flag",
        "config.inner.scale",
        "config.log_dir",
        "metrics.nested.x",
        "metrics.other",
        "metrics.per_seed",
        "metrics.sum",
    ]
    first = expected[0]
    assert table[1] == [
        first["hash"],
        str(first["config.a"]),
        "0.5",
        "",
        "1.0",
        str(tmp_path),
        str(first["config.a"]),
        "",
        f"[{first['config.a']}, {2 * first['config.a']}]",
        str(first["config.a"] + 0.5),
    ]
    assert table[3] == ["extra"] + [""] * 9
    with pytest.raises(SiptError, match="does not exist"):
        collect_results(tmp_path / "nowhere")
