"""The house rules of ``docs/architecture.md``, checked on the installed package.

* the import-linter layers contract in ``pyproject.toml`` (data flows one way: no layer imports a
  layer above it);
* no import cycles between modules at all, ``TYPE_CHECKING`` imports included (grimp counts them);
* a module over 400 lines is a warning, not a failure: a room is split by meaning, never by a line cap;
* no module name stutters its package's (``study/study_arms.py``): the same name may sit in two
  packages (``lc/arms.py``, ``domain/arms.py``);
* no CLI command imports another: what commands share lives in ``cli.arguments`` (and
  ``cli.option_files``, the config files of every command).
"""

import ast
import subprocess
import sys
import warnings
from pathlib import Path

import grimp
import networkx as nx

import sipt_lab

PACKAGE = Path(sipt_lab.__file__).parent
MAX_MODULE_LINES = 400


def test_layers_contract_is_kept():
    lint_imports = Path(sys.executable).with_name("lint-imports")
    done = subprocess.run([str(lint_imports)], capture_output=True, text=True, cwd=PACKAGE.parent)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert "0 broken" in done.stdout


def test_no_import_cycles():
    graph = grimp.build_graph("sipt_lab")
    imports = nx.DiGraph([(m, d) for m in graph.modules for d in graph.find_modules_directly_imported_by(m)])
    cycles = [" -> ".join(cycle) for cycle in nx.simple_cycles(imports, length_bound=6)]
    assert cycles == []


def test_long_modules_are_a_warning():
    long = {
        str(p.relative_to(PACKAGE)): n
        for p in PACKAGE.rglob("*.py")
        if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_MODULE_LINES
    }
    for module, lines in sorted(long.items()):
        warnings.warn(f"{module} has {lines} lines: does it hold one idea?", stacklevel=1)


def test_module_names_do_not_stutter_their_package():
    stutter = [
        str(p.relative_to(PACKAGE))
        for p in PACKAGE.rglob("*.py")
        if p.parent != PACKAGE and p.stem.startswith(p.parent.name.rstrip("s") + "_")
    ]
    assert stutter == []


#: CLI modules every command may import: the shared flags and values, the config files, the entry point.
CLI_SHARED = {"sipt_lab.cli.arguments", "sipt_lab.cli.option_files", "sipt_lab.cli.main"}


def test_no_cli_command_imports_another():
    found = []
    for path in sorted((PACKAGE / "cli").glob("*.py")):
        module = f"sipt_lab.cli.{path.stem}"
        if module in CLI_SHARED or path.stem == "__init__":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("sipt_lab.cli."):
                if node.module not in CLI_SHARED:
                    found.append(f"{module} imports {node.module}")
    assert found == []


def test_no_merge_conflict_markers_are_committed():
    root = PACKAGE.parent
    tracked = subprocess.run(["git", "ls-files"], capture_output=True, text=True, cwd=root).stdout.split()
    marked = []
    for name in tracked:
        path = root / name
        if path.suffix in {".py", ".md", ".toml", ".yml", ".cfg", ".txt", ""} and path.is_file():
            lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
            if any(line.startswith(("<<<<<<< ", ">>>>>>> ")) for line in lines):
                marked.append(name)
    assert marked == []
