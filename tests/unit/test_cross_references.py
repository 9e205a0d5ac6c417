"""Cross-references: every dotted name of the package and every repository path that the docstrings
and the docs cite names something that exists, so a module move cannot leave a stale pointer behind.

Where references are read:

* every string statement of ``sipt_lab`` (module, class and function docstrings, and the string
  under an attribute), found with ``ast``; comments are not read;
* the docstrings of the scripts beside the package (``results/``, ``benchmarks/``,
  ``paper_figures/``, ``docs/hooks.py``);
* ``README.md``, ``results/README.md``, ``benchmarks/RESULTS.md`` and ``docs/**/*.md``, code blocks
  included.

What counts as a reference, and how it resolves:

* ``sipt_lab.a.b.C`` anywhere, and each name of ``from sipt_lab.a import b, c`` in examples;
* a Sphinx role (``:func:`~sipt_lab.a.b```): a qualified target as above; an unqualified one
  (``:class:`Name```, ``:meth:`Name.m```) in the namespace of the docstring's class or module, or
  else as a top-level name or class member that some module of the package defines (in a script:
  first as a name the script defines or imports, read with ``ast``); a dotted target whose first part is another
  library's module (``torch_geometric.data.Data``) is not ours to check;
* a backticked dotted name whose first part is a sub-package of ``sipt_lab`` (``grid.Cell``,
  ``core.options.option``, ``studies.lc.atlas``), unless that first part is a parameter of
  the documented function (``data.links`` of a ``data`` argument).

A dotted name resolves when its longest importable prefix imports and ``getattr`` finds the rest;
after a class, a dataclass field, an annotated attribute or an attribute its methods assign to
``self`` counts too. Not checked, because nothing in the text says what they belong to: a dotted
name whose first part is a class, a variable or a sibling module (``TrainConfig.steps``,
``config.toml``, ``np.ndarray``, ``loop.train``) outside a Sphinx role.

Repository paths (``tests/…py``, ``benchmarks/…py``, ``results/…csv|json|png|md``,
``paper_figures/…py``, ``docs/…md``, ``sipt_lab/…``) must exist, from the repository root or, in a
docs page, from the page's folder (a Markdown link); one holding a wildcard or a placeholder (``*``,
``{``, ``<``, ``NAME``) is a pattern, not a citation.
"""

from __future__ import annotations

import ast
import dataclasses
import importlib
import importlib.util
import inspect
import re
import textwrap
import types
from collections import defaultdict
from functools import cache
from pathlib import Path

import sipt_lab

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = Path(sipt_lab.__file__).parent
SUBPACKAGES = frozenset(p.parent.name for p in PACKAGE.glob("*/__init__.py"))
TEXTS = [
    ROOT / "README.md",
    ROOT / "results" / "README.md",
    ROOT / "benchmarks" / "RESULTS.md",
    *sorted((ROOT / "docs").rglob("*.md")),
]
SCRIPTS = [
    *sorted((ROOT / "results").glob("*.py")),
    *sorted((ROOT / "benchmarks").glob("*.py")),
    *sorted((ROOT / "paper_figures").glob("*.py")),
    ROOT / "docs" / "hooks.py",
]

NAME = r"[A-Za-z_]\w*"
DOTTED = rf"{NAME}(?:\.{NAME})*"
#: ``sipt_lab.a.b`` not inside a longer word or path (``sipt_lab.egg-info`` is a folder).
QUALIFIED = re.compile(rf"(?<![\w./-])sipt_lab(?:\.{NAME})+(?![\w-])")
IMPORT_FROM = re.compile(rf"from (sipt_lab(?:\.{NAME})*) import \(?((?:\s*{NAME}(?: as {NAME})?\s*,?)+)\)?")
ROLE = re.compile(rf":(?:py:)?(?:func|class|meth|attr|mod|data|obj|exc|const):`~?(\.?{DOTTED})(?:\(\))?`")
#: A backticked (single or double) dotted name, optionally called: ```grid.Cell```, ```a.b(x)```.
BACKTICKED = re.compile(rf"(?<![`:\w])``?({NAME}(?:\.{NAME})+)(?:\([^`]*\))?``?(?!`)")
PATH = re.compile(
    r"(?<![\w./-])((?:tests|benchmarks|results|paper_figures|docs|sipt_lab)/[\w./{}<>*-]*"
    r"\.(?:py|csv|json|png|md|tsv|toml|txt|sh))(?![\w/])"
)
PLACEHOLDER = re.compile(r"[*{}<>]|NAME")


@dataclasses.dataclass(frozen=True)
class Reference:
    where: str  # "path:line"
    name: str  # a dotted name or a repository path
    kind: str  # "name"; "relative": in the namespace of ``module`` (and ``owner``); "path"
    module: str | None = None
    owner: str | None = None  # the class whose docstring (or method's docstring) holds it


@dataclasses.dataclass(frozen=True)
class Context:
    """Where a text sits: its file, first line, module and class, and the documented function's
    parameters."""

    where: str
    line: int = 1
    module: str | None = None
    owner: str | None = None
    parameters: frozenset[str] = frozenset()


def references_in(text: str, context: Context) -> list[Reference]:
    found = []

    def add(offset, name, kind="name"):
        line = context.line + text.count("\n", 0, offset)
        found.append(Reference(f"{context.where}:{line}", name, kind, context.module, context.owner))

    for match in QUALIFIED.finditer(text):
        add(match.start(), match.group())
    for match in IMPORT_FROM.finditer(text):
        for imported in match.group(2).replace("(", " ").replace(")", " ").split(","):
            if imported.strip():
                add(match.start(), f"{match.group(1)}.{imported.split()[0]}")
    for match in ROLE.finditer(text):
        target = match.group(1).lstrip(".")
        first = target.split(".")[0]
        if first == "sipt_lab":
            continue  # QUALIFIED has it
        if first in SUBPACKAGES:
            add(match.start(), f"sipt_lab.{target}")
        else:
            add(match.start(), target, "relative")
    for match in BACKTICKED.finditer(text):
        name = match.group(1)
        first = name.split(".")[0]
        if first in SUBPACKAGES and first not in context.parameters:
            add(match.start(), f"sipt_lab.{name}")
    for match in PATH.finditer(text):
        if not PLACEHOLDER.search(match.group(1)):
            add(match.start(), match.group(1).rstrip("."), "path")
    return found


def _parameters(function: ast.FunctionDef | ast.AsyncFunctionDef) -> frozenset[str]:
    arguments = function.args
    every = [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs, arguments.vararg, arguments.kwarg]
    return frozenset(argument.arg for argument in every if argument is not None)


def strings_of(path: Path, module: str | None) -> list[tuple[str, Context]]:
    """Every string statement of a Python file (docstrings and attribute strings) with its context."""
    where = str(path.relative_to(ROOT))
    found = []

    def walk(node, owner, parameters):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.Expr) and isinstance(child.value, ast.Constant):
                if isinstance(child.value.value, str):
                    context = Context(where, child.value.lineno, module, owner, parameters)
                    found.append((child.value.value, context))
            if isinstance(child, ast.ClassDef):
                walk(child, child.name if owner is None else owner, frozenset())
            elif isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                walk(child, owner, _parameters(child))
            else:
                walk(child, owner, parameters)

    walk(ast.parse(path.read_text(encoding="utf-8")), None, frozenset())
    return found


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def collect() -> list[Reference]:
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for text, context in strings_of(path, module_name(path)):
            found += references_in(text, context)
    for path in SCRIPTS:
        for text, context in strings_of(path, None):
            found += references_in(text, context)
    for path in TEXTS:
        found += references_in(path.read_text(encoding="utf-8"), Context(str(path.relative_to(ROOT))))
    return found


@cache
def defined_names() -> dict[str, frozenset[str]]:
    """Name -> the modules of the package that define it at top level or as a member of a
    top-level class (``ast``, nothing imported)."""
    where = defaultdict(set)
    for path in PACKAGE.rglob("*.py"):
        module = module_name(path)
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            for name in _defined_by(node):
                where[name].add(module)
            if isinstance(node, ast.ClassDef):
                for member in node.body:
                    for name in _defined_by(member):
                        where[name].add(f"{module}.{node.name}")
    return {name: frozenset(modules) for name, modules in where.items()}


def _defined_by(node: ast.stmt) -> list[str]:
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        return [node.name]
    if isinstance(node, ast.Assign):
        return [target.id for target in node.targets if isinstance(target, ast.Name)]
    if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
        return [node.target.id]
    return []


@cache
def _import(name: str):
    return importlib.import_module(name)


def _longest_module(parts: list[str]):
    """The longest importable prefix of ``parts`` and the number of parts it takes."""
    for cut in range(len(parts), 0, -1):
        name = ".".join(parts[:cut])
        try:
            return _import(name), cut
        except ModuleNotFoundError as error:
            if error.name is None or not name.startswith(error.name):
                raise  # a missing dependency, not a missing module of ours
    raise ModuleNotFoundError(parts[0])


@cache
def _assigned_to_self(cls: type) -> frozenset[str]:
    try:
        source = textwrap.dedent(inspect.getsource(cls))
    except (OSError, TypeError):
        return frozenset()
    names = set()
    for node in ast.walk(ast.parse(source)):
        targets = node.targets if isinstance(node, ast.Assign) else []
        if isinstance(node, ast.AnnAssign | ast.AugAssign):
            targets = [node.target]
        for target in targets:
            if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) and target.value.id == "self":
                names.add(target.attr)
    return frozenset(names)


def _instance_attribute(cls: type, name: str) -> bool:
    """``name`` is a dataclass field, an annotated attribute or a ``self.name = ...`` of ``cls`` or a
    base class: an attribute of its instances that the class itself may lack."""
    if dataclasses.is_dataclass(cls) and name in {field.name for field in dataclasses.fields(cls)}:
        return True
    return any(name in getattr(base, "__annotations__", {}) or name in _assigned_to_self(base) for base in cls.__mro__)


def _resolve_in(obj, parts: list[str]) -> bool:
    for position, attribute in enumerate(parts):
        if hasattr(obj, attribute):
            obj = getattr(obj, attribute)
        elif isinstance(obj, type) and _instance_attribute(obj, attribute):
            return position == len(parts) - 1  # nothing known to look into past an instance attribute
        else:
            return False
    return True


def _resolves_qualified(parts: list[str]) -> bool:
    try:
        module, cut = _longest_module(parts)
    except ModuleNotFoundError:
        return False
    if not _resolve_in(module, parts[cut:]):
        return False
    return cut == len(parts) or _defined_under(getattr(module, parts[cut]), module.__name__)


def _defined_under(obj, module: str) -> bool:
    """A function or class is named where it is defined, or by a package that re-exports it from
    one of its own modules; a pointer through another module's import of it is stale."""
    if not isinstance(obj, type | types.FunctionType):
        return True
    return obj.__module__ == module or obj.__module__.startswith(module + ".")


def resolves(reference: Reference) -> bool:
    if reference.kind == "path":
        page = (ROOT / reference.where.rsplit(":", 1)[0]).parent
        return (ROOT / reference.name).exists() or (page / reference.name).exists()
    parts = reference.name.split(".")
    if reference.kind == "name":
        return _resolves_qualified(parts)
    if reference.module is None:  # a script's name, read without running the script
        own, imported = _script_names(reference.where.rsplit(":", 1)[0])
        if parts[0] in own:
            return True
        if parts[0] in imported:
            return _resolves_qualified([*imported[parts[0]].split("."), *parts[1:]])
    else:
        module = _import(reference.module)
        scopes = [getattr(module, reference.owner or "", None), module]
        if any(scope is not None and _resolve_in(scope, parts) for scope in scopes):
            return True
    homes = defined_names().get(parts[0], ())
    if not homes and len(parts) > 1 and importlib.util.find_spec(parts[0]) is not None:
        return True  # another library's name (``torch_geometric.data.Data``): not ours to check
    return any(_resolves_qualified([*home.split("."), *parts]) for home in homes)


@cache
def _script_names(where: str) -> tuple[frozenset[str], dict[str, str]]:
    """A script's own top-level names, and each name it imports from the package -> its
    qualified name."""
    tree = ast.parse((ROOT / where).read_text(encoding="utf-8"))
    imported = {
        alias.asname or alias.name: f"{node.module}.{alias.name}"
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("sipt_lab")
        for alias in node.names
    }
    return frozenset(name for node in tree.body for name in _defined_by(node)), imported


def test_collector_finds_every_kind_of_reference():
    """The patterns on one text: what they must find and what they must leave alone."""
    text = (
        "See :func:`~sipt_lab.core.options.option`, ``grid.Cell``, `training.names`, "
        "sipt_lab.cli.main, :class:`Thing`, `np.ndarray`, `config.toml`, TrainConfig.steps, `data.links`, "
        "``results/fig5a.csv``, tests/unit/test_docs.py, results/{name}.csv, sipt_lab.egg-info.\n"
        "from sipt_lab.graphs import local_consistency, PretrainingGraph"
    )
    found = references_in(text, Context("x", module="sipt_lab.training.loop", parameters=frozenset({"data"})))
    assert sorted((r.kind, r.name) for r in found) == [
        ("name", "sipt_lab.cli.main"),
        ("name", "sipt_lab.core.options.option"),
        ("name", "sipt_lab.graphs"),
        ("name", "sipt_lab.graphs.PretrainingGraph"),
        ("name", "sipt_lab.graphs.local_consistency"),
        ("name", "sipt_lab.grid.Cell"),
        ("name", "sipt_lab.training.names"),
        ("path", "results/fig5a.csv"),
        ("path", "tests/unit/test_docs.py"),
        ("relative", "Thing"),
    ]


def test_resolution_follows_classes_fields_and_missing_names():
    assert resolves(Reference("x:1", "sipt_lab.training.train_config.TrainConfig.steps", "name"))
    assert resolves(Reference("x:1", "sipt_lab.grid.Cell", "name"))
    assert resolves(Reference("x:1", "TrainConfig.lr", "relative", "sipt_lab.training.names"))
    assert not resolves(Reference("x:1", "sipt_lab.training.train_config.TrainConfig.no_such_field", "name"))
    assert not resolves(Reference("x:1", "sipt_lab.no_such_module.thing", "name"))
    assert not resolves(Reference("x:1", "tests/no_such_test.py", "path"))


def test_every_cross_reference_resolves():
    references = collect()
    assert len(references) > 300  # the collector reads what it should
    stale = sorted({f"{r.where} -> {r.name}" for r in references if not resolves(r)})
    assert not stale, "stale cross-references (point each at where the thing lives now):\n" + "\n".join(stale)
