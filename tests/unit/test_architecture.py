"""The house rules of ``docs/architecture.md``, checked on the installed package.

* the import-linter layers contract in ``pyproject.toml`` (data flows one way: no layer imports a
  layer above it);
* no import cycles between modules at all, ``TYPE_CHECKING`` imports included (grimp counts them);
* no module over 400 lines;
* no two modules with the same name, the CLI's one module per subcommand aside.
"""

import subprocess
import sys
from collections import Counter
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


def test_modules_are_short():
    long = {
        str(p.relative_to(PACKAGE)): n
        for p in PACKAGE.rglob("*.py")
        if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_MODULE_LINES
    }
    assert long == {}


def test_module_names_are_unique():
    stems = Counter(p.stem for p in PACKAGE.rglob("*.py") if p.stem != "__init__" and p.parent.name != "cli")
    assert {name: n for name, n in stems.items() if n > 1} == {}


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
