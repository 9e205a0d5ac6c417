"""The documentation: the README's promises, its headline table against the committed CSVs, the
generated CLI and API pages, and a strict MkDocs build of the whole site."""

from __future__ import annotations

import importlib
import importlib.util
import math
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
INSTALL = 'python3 -m venv .venv && . .venv/bin/activate && pip install "torch==2.13.0" -e ".[test]"'
TEST = "python -m pytest -q"


def _load(name: str, path: Path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def tables():
    return _load("sipt_results_tables", ROOT / "results" / "tables.py")


@pytest.fixture(scope="module")
def hooks():
    return _load("sipt_docs_hooks", ROOT / "docs" / "hooks.py")


def markdown_table(text: str, heading: str) -> list[list[str]]:
    """The cells of the first Markdown table after ``heading`` (header and separator rows dropped)."""
    after = text.split(heading, 1)[1]
    rows = []
    for line in after.splitlines():
        if line.startswith("|"):
            rows.append([cell.strip() for cell in line.strip().strip("|").split("|")])
        elif rows:
            break
    return rows[2:]


def test_readme_is_short_and_keeps_the_two_commands():
    text = README.read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 150
    assert INSTALL in text and TEST in text  # .ci/run calls exactly these
    for job in (
        "sipt-lab simulate",
        "sipt-lab consistency",
        "sipt-lab figures",
        "sipt-lab pretrain",
        "sipt-lab embed",
        "sipt-lab finetune",
        "sipt-lab domain run",
    ):
        assert job in text, job


def test_ci_builds_a_new_users_environment_and_runs_the_readmes_test_command():
    """CI installs the way a new user does (a fresh virtual environment, the README's install
    command) and then runs exactly the README's test command, nothing else."""
    lines = (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    commands = [line for line in lines if line.strip() and not line.startswith(("#", "set ", 'cd "$(dirname'))]
    assert commands == [INSTALL, TEST]


def test_readme_links_resolve():
    text = README.read_text(encoding="utf-8")
    for target in re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", text):
        if "://" not in target:
            assert (ROOT / target).exists(), f"README links to a missing file: {target}"


def test_readme_results_prose_is_what_the_committed_results_render(tables):
    """Every ``results-text`` block of the README holds what ``results/tables.py`` renders from the
    committed files now (``python results/tables.py --write README.md`` rewrites them)."""
    text = README.read_text(encoding="utf-8")
    blocks = tables.README_BLOCK.findall(text)
    assert [name for _, name, _, _ in blocks] == ["cli-reliability", "headline-reading"]
    assert tables.render_blocks(text) == text, (
        "README's results prose is stale: run `python results/tables.py --write README.md`"
    )


def test_an_empty_results_block_is_filled_and_keeps_the_next(tables):
    """A ``results-text`` block with no text line yet (its end marker right after its start) is
    an empty block: the next block stays its own, and rendering fills each with its own text."""
    empty = "<!-- results-text: cli-reliability -->\n<!-- /results-text -->"
    stale = "<!-- results-text: headline-reading -->\nold\n<!-- /results-text -->"
    text = f"{empty}\n\nbetween\n\n{stale}\n"
    assert [(name, body) for _, name, body, _ in tables.README_BLOCK.findall(text)] == [
        ("cli-reliability", ""),
        ("headline-reading", "old"),
    ]
    rendered = tables.render_blocks(text)
    filled = [(name, body) for _, name, body, _ in tables.README_BLOCK.findall(rendered)]
    assert [name for name, _ in filled] == ["cli-reliability", "headline-reading"]
    assert filled[0][1].startswith("The hostile-input battery") and filled[1][1] not in ("", "old")
    assert "\n\nbetween\n\n" in rendered and tables.render_blocks(rendered) == rendered


#: A decimal number in prose (not part of a version, a path or a longer number).
PROSE_NUMBER = re.compile(r"(?<![\w.])[-−+]?(\d+\.\d+)(?![\d.])")
#: What is not prose: fenced and inline code, comments, rendered blocks, table rows.
NOT_PROSE = re.compile(
    r"```.*?```|`[^`\n]*`|<!--.*?-->|<!-- results-text:.*?<!-- /results-text -->|^\|.*$", re.S | re.M
)


def committed_numbers() -> set[str]:
    """Every number of the committed result files (``results/``, ``benchmarks/results/``) as prose
    could print it: 1 to 4 decimals, as it is, its magnitude, and as a percentage."""
    known = set()
    files = [
        *(ROOT / "results").rglob("*.csv"),
        *(ROOT / "results").rglob("*.json"),
        *(ROOT / "benchmarks" / "results").rglob("*"),
    ]
    for path in files:
        if not path.is_file():
            continue
        for match in re.findall(r"[-+]?\d+\.\d+(?:e[-+]?\d+)?", path.read_text(encoding="utf-8", errors="ignore")):
            value = float(match)
            for shown in (value, abs(value), 100 * value, 100 * abs(value)):
                known.update(f"{shown:.{digits}f}" for digits in range(1, 5))
    return known


def test_every_number_in_readme_and_docs_prose_comes_from_a_committed_result():
    """Claims follow the data: a decimal number the README or a docs page states in prose is one of
    the committed results' (tables and the README's results prose are rendered from them)."""
    known = committed_numbers()
    unknown = []
    for path in [README, *sorted((ROOT / "docs").rglob("*.md"))]:
        prose = NOT_PROSE.sub(" ", path.read_text(encoding="utf-8"))
        unknown += [
            f"{path.relative_to(ROOT)}: {number}"
            for number in PROSE_NUMBER.findall(prose)
            if float(number) != 0 and number not in known
        ]
    assert not unknown, f"prose numbers no committed result holds (render them from results/): {unknown}"


def test_readme_headline_table_matches_the_results_csvs(tables):
    readme = markdown_table(README.read_text(encoding="utf-8"), "## Headline results")
    generated = markdown_table("## Headline results\n" + tables.markdown_table("headline"), "## Headline results")
    assert readme == generated, "README's headline table differs: paste `python results/tables.py headline`"

    # and recomputed here from the raw CSV rows, independently of the formatting code
    families = {row["graph"]: row for row in tables.read("results/fig5a.csv")}
    noisy = {row["noise_percent"]: row for row in tables.read("results/fig5b.csv")}
    assert len(readme) == len(families) + 1
    for cells in readme:
        name = cells[0]
        if "noise" in name:
            row = noisy[float(re.search(r"(\d+) %", name)[1])]
        else:
            row = families[{"MÖBIUS": "mobius"}.get(name, name.lower())]
        numbers = [float(x) for x in re.findall(r"[-+]?\d+\.\d+", " | ".join(cells[1:]).replace("−", "-"))]
        lc, rest = numbers[0], numbers[1:]
        assert lc == pytest.approx(row["local_consistency_mean"], abs=0.005)
        if not math.isnan(row["paper_lm_auroc"]):
            paper, rest = rest[:2], rest[2:]
            assert paper == pytest.approx([row["paper_lm_auroc"], row["paper_sipt_auroc"]], abs=5e-4)
        lm_mean, lm_sd, sipt_mean, sipt_sd, gain = rest
        assert [lm_mean, lm_sd] == pytest.approx([row["lm_auroc_mean"], row["lm_auroc_sd"]], abs=5e-4)
        assert [sipt_mean, sipt_sd] == pytest.approx([row["sipt_auroc_mean"], row["sipt_auroc_sd"]], abs=5e-4)
        assert gain == pytest.approx(row["sipt_auroc_mean"] - row["lm_auroc_mean"], abs=5e-4)


def test_every_results_table_renders_and_its_csvs_are_tracked(tables):
    for name in tables.TABLES:
        assert tables.markdown_table(name).strip()
    listed = re.findall(r"`((?:benchmarks/)?results/[\w./-]+\.csv)`", (ROOT / "results" / "README.md").read_text())
    pages = "\n".join(p.read_text(encoding="utf-8") for p in (ROOT / "docs" / "results").glob("*.md"))
    for csv_name in re.findall(r"results-table: csv:([\w./-]+)", pages):
        assert csv_name in listed, f"{csv_name} is shown in the docs but not listed in results/README.md"
        assert tables.markdown_table(f"csv:{csv_name}").strip()
    assert listed
    for csv_name in listed:
        assert (ROOT / csv_name).is_file(), csv_name
    if shutil.which("git") and (ROOT / ".git").exists():
        ignored = subprocess.run(["git", "check-ignore", *listed], cwd=ROOT, capture_output=True, text=True).stdout
        assert not ignored.strip(), f"git ignores result CSVs: {ignored}"


def test_cli_reference_has_every_subcommand(hooks):
    from sipt_lab.cli.main import build_parser

    page = hooks.cli_reference()
    for command, _, text, _ in hooks._walk(build_parser(), "sipt-lab", 0):
        assert f"`{command}`" in page
        assert text.splitlines()[0] in page  # the usage line, as --help prints it


def test_api_page_names_importable_objects():
    """Modules move during redesigns: this names the directive to fix before the docs build does."""
    page = (ROOT / "docs" / "reference" / "api.md").read_text(encoding="utf-8")
    targets = re.findall(r"^::: ([\w.]+)", page, re.M)
    assert targets
    for target in targets:
        parts = target.split(".")
        for cut in range(len(parts), 0, -1):
            try:
                obj = importlib.import_module(".".join(parts[:cut]))
            except ModuleNotFoundError:
                continue
            for attribute in parts[cut:]:
                assert hasattr(obj, attribute), f"docs/reference/api.md: `::: {target}` names nothing"
                obj = getattr(obj, attribute)
            break
        else:
            pytest.fail(f"docs/reference/api.md: `::: {target}` names no module")


def test_docs_prose_has_no_issue_numbers():
    """Issue numbers and measurement logs belong to the results pages and benchmarks/RESULTS.md."""
    for page in (ROOT / "docs").rglob("*.md"):
        if "results" in page.parts:
            continue
        text = page.read_text(encoding="utf-8")
        assert not re.search(r"\bissues? #?\d+", text, re.I), page


@pytest.mark.slow
def test_mkdocs_build_strict(tmp_path):
    for module in ("mkdocs", "material", "mkdocstrings", "mkdocstrings_handlers.python"):
        pytest.importorskip(module)
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
        "NO_MKDOCS_2_WARNING": "1",
    }
    site = tmp_path / "site"
    result = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    cli = (site / "reference" / "cli" / "index.html").read_text(encoding="utf-8")
    assert "sipt-lab simulate" in cli and "usage:" in cli
    assert "local_consistency" in (site / "reference" / "api" / "index.html").read_text(encoding="utf-8")
    headline = (site / "results" / "index.html").read_text(encoding="utf-8")
    assert "results-table" not in headline and "0.629 ± 0.073" in headline
    figures = {path.name for path in (site / "figures").glob("*.png")}
    assert {"fig5a.png", "fig5b.png", "lc_transfer_cpu.png", "lc_transfer_gpu_wiki.png"} <= figures
    for page, shown in [
        ("results/paper", {"fig5a.png", "fig5b.png"}),
        ("results/domains", {"lc_transfer_cpu.png", "lc_transfer_gpu_wiki.png"}),
        ("guides/figures", {"fig5a.png", "fig5b.png"}),
        ("guides/finetune", {"lc_transfer_cpu.png"}),
    ]:
        html = (site / page / "index.html").read_text(encoding="utf-8")
        assert shown <= set(re.findall(r'<img[^>]*src="\.\./\.\./figures/([\w.]+)"', html)), page


def test_docs_have_their_own_extra():
    import tomllib

    extras = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["optional-dependencies"]
    assert any(requirement.startswith("mkdocs-material") for requirement in extras["docs"])
    assert 'pip install -e ".[docs]"' in README.read_text(encoding="utf-8")


def test_scale_dask_example_runs_as_written(tmp_path, monkeypatch, capsys):
    """docs/scale.md's Dask section: its Python block writes the files, its first command reads them."""
    pytest.importorskip("distributed")
    import shlex

    from sipt_lab.cli.main import main

    section = (ROOT / "docs" / "scale.md").read_text().split("## On a cluster, with Dask")[1].split("\n## ")[0]
    python = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    command = re.search(r"```bash\n(.*?)\n", section, re.S).group(1).split("#")[0]
    monkeypatch.chdir(tmp_path)
    exec(compile(python, "docs/scale.md", "exec"), {})
    assert main(shlex.split(command)[1:]) == 0
    assert "local consistency" in capsys.readouterr().out
