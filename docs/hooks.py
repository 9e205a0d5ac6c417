"""MkDocs hooks: pages whose content is generated at build time, so they cannot disagree with the code.

* ``<!-- cli-reference -->`` is replaced by the ``--help`` of ``sipt-lab`` and of every subcommand
  (and their actions), read from the argparse parser of :mod:`sipt_lab.cli.main`.
* ``<!-- import-contract -->`` and ``<!-- package-tree -->`` become the layers of the import-linter
  contract in ``pyproject.toml`` and a table of every module of ``sipt_lab`` with the first
  paragraph of its docstring (read with ``ast``, nothing imported), so the architecture page
  follows modules as they move.
* ``<!-- include: PATH -->`` is replaced by the Markdown file ``PATH`` of the repository (its title
  dropped): ``results/README.md`` and ``benchmarks/RESULTS.md`` are shown on the site, not copied.
* ``<!-- results-table: NAME -->`` ... ``<!-- /results-table -->`` blocks (and the README's
  ``results-text`` blocks) are re-rendered by ``results/tables.py``'s ``render_blocks`` from the
  CSVs committed under ``results/``. The pages hold the rendered text too (``python
  results/tables.py --write PAGE`` writes it), so GitHub shows it, and ``tests/unit/test_docs.py``
  checks that every page's blocks are current; the built page keeps the text, not the markers.
* The site's figures (``figures/NAME.png``, :func:`site_figures`): the PNGs committed under
  ``results/``, and Figure 5a and 5b drawn at build time from ``results/fig5a.csv`` and
  ``fig5b.csv`` by the functions ``sipt-lab figures`` draws them with.
"""

from __future__ import annotations

import argparse
import csv
import importlib.util
import os
import re
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
HELP_WIDTH = "100"  # argparse wraps help to $COLUMNS: fixed so the page does not depend on the terminal
#: The site folder of the figures; a page links ``../figures/NAME.png`` (one level down) or ``figures/NAME.png``.
FIGURE_DIR = "figures"
#: The markers around a rendered block, dropped from the built page (they matter only in the source).
BLOCK_MARKER = re.compile(r"^<!-- /?results-(?:table|text)(?:: [\w.:/-]+)? -->\n?", re.M)


def _subcommands(parser: argparse.ArgumentParser):
    """``(name, help, subparser)`` of each subcommand of ``parser``, in ``--help`` order."""
    for action in parser._actions:  # argparse keeps subparsers only in this private list
        if isinstance(action, argparse._SubParsersAction):
            helps = {choice.dest: choice.help for choice in action._choices_actions}
            for name, sub in action.choices.items():
                yield name, helps.get(name), sub


def _walk(parser: argparse.ArgumentParser, prefix: str, depth: int):
    for name, summary, sub in _subcommands(parser):
        command = f"{prefix} {name}"
        yield command, summary, sub.format_help(), depth
        yield from _walk(sub, command, depth + 1)


def cli_reference() -> str:
    from sipt_lab.cli.main import build_parser

    old = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = HELP_WIDTH
    try:
        parser = build_parser()
        lines = ["## `sipt-lab`", "", "```text", parser.format_help().rstrip(), "```", ""]
        for command, summary, text, depth in _walk(parser, "sipt-lab", 0):
            lines += [f"{'#' * (depth + 2)} `{command}`", ""]
            if summary:
                lines += [summary[0].upper() + summary[1:] + ".", ""]
            lines += ["```text", text.rstrip(), "```", ""]
    finally:
        if old is None:
            del os.environ["COLUMNS"]
        else:
            os.environ["COLUMNS"] = old
    return "\n".join(lines)


def results_tables():
    spec = importlib.util.spec_from_file_location("sipt_results_tables", ROOT / "results" / "tables.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def on_page_markdown(markdown: str, page, config, files) -> str:
    if "<!-- cli-reference -->" in markdown:
        markdown = markdown.replace("<!-- cli-reference -->", cli_reference())
    if "<!-- results-" in markdown:
        markdown = BLOCK_MARKER.sub("", results_tables().render_blocks(markdown))
    return _generated_sections(markdown)


def _first_line(path: Path) -> str:
    """The first sentence-line of a module's docstring, read without importing the module."""
    import ast

    doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""
    return " ".join(doc.split("\n\n")[0].split()) if doc else ""


def import_contract() -> str:
    """The layers of the import-linter contract in ``pyproject.toml``, top (may import all below) first."""
    import tomllib

    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    lines = []
    for contract in project["tool"]["importlinter"]["contracts"]:
        lines += [f"**{contract['name']}** (`{contract['type']}`):", ""]
        lines += ["| layer (top imports bottom) | packages |", "|---|---|"]
        for number, layer in enumerate(contract.get("layers", []), 1):
            names = ", ".join(f"`{name.strip()}`" for name in layer.split("|"))
            lines.append(f"| {number} | {names} |")
        lines.append("")
    return "\n".join(lines)


def _layers() -> list[list[str]]:
    import tomllib

    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    contract = next(c for c in project["tool"]["importlinter"]["contracts"] if c["type"] == "layers")
    return [[name.strip() for name in layer.split("|")] for layer in contract["layers"]]


def package_tree() -> str:
    """One table row per module of ``sipt_lab``, bottom layer first, with its docstring's first paragraph."""
    order = [name for layer in reversed(_layers()) for name in layer]
    lines = ["| module | what it holds |", "|---|---|"]
    rows = []
    for path in (ROOT / "sipt_lab").rglob("*.py"):
        if "__pycache__" in path.parts:
            continue
        relative = path.relative_to(ROOT).with_suffix("")
        parts = relative.parts[:-1] if relative.name == "__init__" else relative.parts
        if relative.name == "__init__" and not _first_line(path):
            continue  # an empty package marker
        name = ".".join(parts)
        top = ".".join(parts[:2])
        rank = order.index(top) if top in order else len(order)
        rows.append((rank, name, _first_line(path).replace("|", "\\|")))
    for _, name, summary in sorted(rows):
        lines.append(f"| `{name}` | {summary} |")
    return "\n".join(lines)


INCLUDE_MARKER = re.compile(r"<!-- include: ([\w./-]+) -->")


def _include(match: re.Match) -> str:
    """A Markdown file of the repository, its first heading dropped (the page has its own)."""
    text = (ROOT / match[1]).read_text(encoding="utf-8")
    lines = text.splitlines()
    if lines and lines[0].startswith("# "):
        lines = lines[1:]
    return "\n".join(lines)


_GENERATED = {
    "<!-- import-contract -->": import_contract,
    "<!-- package-tree -->": package_tree,
}


def _generated_sections(markdown: str) -> str:
    markdown = INCLUDE_MARKER.sub(_include, markdown)
    for marker, make in _GENERATED.items():
        if marker in markdown:
            markdown = markdown.replace(marker, make())
    return markdown


def _csv_rows(path: Path) -> list[dict]:
    """A committed results CSV, numbers as floats (a figure's table as ``sipt-lab figures`` wrote it)."""

    def value(cell: str):
        try:
            return float(cell)
        except ValueError:
            return cell

    with open(path, newline="", encoding="utf-8") as handle:
        return [{key: value(cell) for key, cell in row.items()} for row in csv.DictReader(handle)]


def site_figures(out: Path) -> list[Path]:
    """The PNGs the site shows: those committed under ``results/``, and Figure 5a and 5b drawn into
    ``out`` from ``results/fig5a.csv`` and ``results/fig5b.csv``."""
    from sipt_lab.viz.figure5_plots import draw_fig5a, draw_fig5b

    drawn = [
        draw(_csv_rows(ROOT / "results" / f"{name}.csv"), out / name)
        for name, draw in (("fig5a", draw_fig5a), ("fig5b", draw_fig5b))
    ]
    return sorted((ROOT / "results").glob("*.png")) + [
        path for paths in drawn for path in paths if path.suffix == ".png"
    ]


#: Where the figures drawn for a build lie until the build has copied them (removed after it).
_drawn = tempfile.TemporaryDirectory(prefix="sipt-lab-docs-figures-")


def on_files(files, config):
    from mkdocs.structure.files import File

    for path in site_figures(Path(_drawn.name)):
        files.append(File.generated(config, f"{FIGURE_DIR}/{path.name}", abs_src_path=str(path)))
    return files


def on_shutdown():
    _drawn.cleanup()
