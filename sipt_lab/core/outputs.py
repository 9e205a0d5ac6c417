"""Output directories: the one check of an output path every subcommand uses, the manifest that
lets a command own a directory without deleting anything it did not write, and the lock that keeps
two processes out of one output.

The one rule for a command that writes a run into a directory (:func:`run_output`): a new or empty
directory is taken; one holding a run of the same command (its :data:`MANIFEST` lists the files it
wrote) needs ``--resume`` (where resuming makes sense) or ``--overwrite``, which replaces only the
listed files, says which, and keeps them aside until the new run has something to put in their
place (the next run on the directory sorts out what a killed one left aside); anything else is
refused. The directory is locked while the run
writes, and a run that fails before it has anything worth keeping leaves nothing behind. Commands
whose run is a resumable grid of cells take a directory with :func:`prepare_grid_dir`.
"""

from __future__ import annotations

import contextlib
import errno
import json
import logging
import os
import shutil
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

from sipt_lab.core.errors import SiptError
from sipt_lab.core.fileio import write_json_atomic
from sipt_lab.core.locks import RUN_LOCK, holds_files, is_lock, locked_dir, make_dir

logger = logging.getLogger(__name__)

#: Name of the file in which a build records the files it wrote (see :func:`claim_output_dir`).
MANIFEST = ".sipt-lab-files.json"


#: Folder of a run directory where ``--overwrite`` keeps the earlier run until the new one has
#: something to put in its place (see :func:`run_output`).
REPLACED_DIR = ".sipt-lab-replaced"


def check_output_dir(
    path: str | Path | None, option: str = "--out", *, owned_only: bool = False, inputs: Iterable[str | Path] = ()
) -> Path:
    """``path`` as a Path if it can be an output directory; changes nothing on disk.

    Raises a one-line :class:`SiptError` naming ``option`` when ``path`` is None or empty (an
    unset shell variable would otherwise mean the current directory), is an existing file, lies
    under a file, or is not writable. With ``owned_only``, an existing directory must also be
    empty or hold only files an earlier build listed in its :data:`MANIFEST` (see
    :func:`claim_output_dir`), none of which may be one of the command's ``inputs``. Call it
    before any expensive work.
    """
    if path is None or not str(path).strip():
        raise SiptError(f"{option} is empty; pass the directory to write into (an unset shell variable?)")
    out = Path(path)
    if out.is_symlink() and not out.exists():
        raise SiptError(f"{option} {out} is {broken_link(out)}; remove the link, or pass another {option}")
    existing = next(parent for parent in [out, *out.parents] if parent.exists() or parent == Path(parent.anchor))
    if not existing.is_dir():
        where = "is a file" if existing == out else f"lies under the file {existing}"
        raise SiptError(f"{option} {out} {where}; pass a directory path")
    if not os.access(existing, os.W_OK | os.X_OK):
        raise SiptError(f"{option} {out} is not writable ({existing} is read-only); pass a directory you can write to")
    if owned_only and existing == out:
        check_inputs_outside(out, inputs, _manifest_files(out / MANIFEST), option)
        owned = set(_manifest_files(out / MANIFEST)) | {MANIFEST}
        foreign = sorted(p.name for p in out.iterdir() if p.name not in owned)
        if foreign:
            shown = ", ".join(foreign[:3]) + (f" and {len(foreign) - 3} more" if len(foreign) > 3 else "")
            raise SiptError(
                f"{option} {out} holds files sipt-lab did not write ({shown}); pass an empty or new directory"
            )
    return out


def broken_link(link: Path) -> str:
    """What is wrong with the symlink ``link`` that leads nowhere, for a message: a loop, or its missing target."""
    try:
        link.stat()
    except OSError as error:
        if error.errno == errno.ELOOP:
            return "a symlink loop (it leads back to itself)"
    return f"a symlink to {os.readlink(link)}, which does not exist"


def prepare_output_dir(path: str | Path | None, option: str = "--out") -> Path:
    """:func:`check_output_dir`, then create the directory; returns it."""
    out = check_output_dir(path, option)
    make_dir(out, option)
    return out


def prepare_grid_dir(path: str | Path | None, command: str, run_key: str | None = None, option: str = "--out") -> Path:
    """:func:`prepare_output_dir` for ``command`` (e.g. ``"simulate"``), whose run is a resumable
    grid of cells: the directory must be new, empty, or hold a run of the same
    command (its :data:`MANIFEST` names it) made with the same settings (``run_key``, a hash of
    them; None: any). A directory of other files, another command's output or a run of other
    settings is refused rather than written into, so a finished run is never replaced by another.
    """
    out = check_output_dir(path, option)
    if out.is_dir() and holds_files(out):
        owner, key = manifest_command(out), _manifest_value(out, "run")
        if owner is None:
            shown = list_for_message(sorted(p.name for p in out.iterdir() if p.name != RUN_LOCK))
            raise SiptError(
                f"{option} {out} holds files ({shown}) and no {command} run sipt-lab recorded there; "
                f"pass a new or empty directory, or the {option} of a {command} run to resume"
            )
        if owner != command:
            raise SiptError(
                f"{option} {out} holds the output of {owner}, not of a {command} run; pass another {option}"
            )
        if run_key is not None and key is not None and key != run_key:
            raise SiptError(
                f"{option} {out} holds a {command} run of other settings; pass another {option}, or that "
                "run's settings to resume it"
            )
    make_dir(out, option)
    if manifest_command(out) is None or (run_key is not None and _manifest_value(out, "run") is None):
        write_json_atomic(out / MANIFEST, {"command": command, "run": run_key, "files": owned_files(out)})
    return out


def check_new_files(
    paths: list[Path], inputs: list[str | Path] = (), *, overwrite: bool = False, option: str = "--out"
) -> None:
    """Refuse, before any work, to write the files ``paths`` of a command that writes named files
    (a converter): one that is one of its ``inputs`` is always refused (the command would replace
    what it reads), one that exists only without ``overwrite``. One-line SiptErrors naming ``option``."""
    for path in paths:
        check_output_dir(path.parent, option)
        if path.is_dir():
            raise SiptError(f"{option}: {path} is a directory; move it away or pass another {option}")
        check_not_an_input(path, inputs, option)
    existing = [path.name for path in paths if path.exists()]
    if existing and not overwrite:
        raise SiptError(
            f"{option}: {list_for_message(existing)} exist(s) already in {paths[0].parent}; "
            f"pass --overwrite to replace them, or another {option}"
        )


@contextlib.contextmanager
def written_together(directory: Path, names: list[str] | None = None) -> Iterator[None]:
    """The files ``names`` in ``directory`` (None: every file there) are one output, written in the
    block: when it raises (a full disk half-way), those the block created or replaced are removed,
    so that what is left never looks like a complete output."""

    def state() -> dict[str, tuple[int, int]]:
        paths = directory.iterdir() if names is None else (directory / name for name in names)
        return {p.name: (p.stat().st_ino, p.stat().st_mtime_ns) for p in paths if p.is_file()}

    before = state()
    try:
        yield
    except BaseException:
        for name, identity in state().items():
            if before.get(name) != identity:
                (directory / name).unlink(missing_ok=True)
        raise


def check_not_an_input(path: Path, inputs: Iterable[str | Path], option: str = "--out") -> None:
    """Refuse to write the file ``path`` when it is one of ``inputs`` or lies inside an input
    directory (a model): the command would replace what it reads, ``--overwrite`` or not."""
    if not path.exists():
        return
    for source in map(Path, inputs):
        if source.exists() and (os.path.samefile(path, source) or (source.is_dir() and _lies_in(path, source))):
            raise SiptError(f"{option}: {path} is also an input of this command ({source}); pass another {option}")


def check_inputs_outside(out: Path, inputs: Iterable[str | Path], owned: Iterable[str], option: str = "--out") -> None:
    """Refuse to replace the files ``owned`` (paths relative to ``out``) of an earlier output when
    one of ``inputs`` is, or lies inside, one of them (``pretrain --init RUN/model --out RUN``)."""
    targets = [out / name for name in owned]
    for source in map(Path, inputs):
        if source.exists() and any(_lies_in(target, source) or _lies_in(source, target) for target in targets):
            raise SiptError(
                f"{option} {out}: its earlier output holds {source}, an input of this command, which --overwrite "
                f"would remove; copy the input elsewhere, or pass another {option}"
            )


def _lies_in(path: Path, directory: Path) -> bool:
    """Whether ``path`` is ``directory`` or lies under it (links resolved)."""
    return path.resolve().is_relative_to(directory.resolve())


def claim_output_dir(path: str | Path | None, option: str = "--out", inputs: Iterable[str | Path] = ()) -> Path:
    """Take ``path`` for a command that owns the whole directory (one build per directory).

    :func:`check_output_dir` with ``owned_only``, then create the directory and delete the files
    an earlier build's :data:`MANIFEST` lists, so none of them stays beside the new build's files
    (one of the command's ``inputs`` among them is refused). Any other file is the user's, and the
    call refuses to go on. Record what the new build wrote with :func:`write_manifest`.
    """
    out = check_output_dir(path, option, owned_only=True, inputs=inputs)
    make_dir(out, option)
    for name in _manifest_files(out / MANIFEST):
        (out / name).unlink(missing_ok=True)
    (out / MANIFEST).unlink(missing_ok=True)
    return out


def write_manifest(out_dir: str | Path, names: list[str]) -> None:
    """Record ``names`` (files directly in ``out_dir``) as written by this build, for :func:`claim_output_dir`."""
    write_json_atomic(Path(out_dir) / MANIFEST, sorted(names))


def record_files(out_dir: str | Path, names: list[str]) -> None:
    """Add ``names`` (paths relative to ``out_dir``, ``/``-separated, e.g. ``model/config.json``) to
    its :data:`MANIFEST`: the files a run owns (and ``--overwrite`` may remove). Record a file
    before writing it, so that a run killed half-way still owns what it left."""
    out_dir = Path(out_dir)
    owned = set(_manifest_files(out_dir / MANIFEST, nested=True))
    if not set(names) <= owned:
        manifest = {"command": manifest_command(out_dir), "run": _manifest_value(out_dir, "run")}
        write_json_atomic(out_dir / MANIFEST, {**manifest, "files": sorted(owned | set(names))})


def manifest_command(out_dir: str | Path) -> str | None:
    """The command whose run ``out_dir``'s :data:`MANIFEST` describes (None: a build's plain list, or none)."""
    return _manifest_value(out_dir, "command")


def _manifest_value(out_dir: str | Path, key: str) -> str | None:
    """The string ``key`` of a run's :data:`MANIFEST` in ``out_dir``; None when it has none."""
    try:
        data = json.loads((Path(out_dir) / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data.get(key) if isinstance(data, dict) and isinstance(data.get(key), str) else None


def record_tree(out_dir: str | Path, subdir: str) -> None:
    """:func:`record_files` of every file under ``out_dir/subdir`` (a directory the run just wrote)."""
    out_dir = Path(out_dir)
    record_files(
        out_dir,
        [path.relative_to(out_dir).as_posix() for path in sorted((out_dir / subdir).rglob("*")) if path.is_file()],
    )


def owned_files(out_dir: str | Path) -> list[str]:
    """The paths (relative to ``out_dir``) its :data:`MANIFEST` lists that exist, sorted."""
    out_dir = Path(out_dir)
    return sorted(name for name in _manifest_files(out_dir / MANIFEST, nested=True) if (out_dir / name).is_file())


def foreign_files(directory: str | Path, out_dir: str | Path) -> list[str]:
    """Files under ``directory`` (``out_dir`` itself or a folder in it) that ``out_dir``'s
    :data:`MANIFEST` does not list, relative to ``out_dir``; the manifest and lock do not count."""
    directory, out_dir = Path(directory), Path(out_dir)
    if not directory.is_dir():
        return []
    owned = set(_manifest_files(out_dir / MANIFEST, nested=True)) | {MANIFEST, RUN_LOCK}
    found = (path.relative_to(out_dir).as_posix() for path in directory.rglob("*") if not path.is_dir())
    return sorted(name for name in found if name not in owned and not name.startswith(f".{RUN_LOCK}."))


def remove_owned(out_dir: str | Path, keep: set[str] = frozenset()) -> list[str]:
    """Delete the files ``out_dir``'s :data:`MANIFEST` lists (but those in ``keep``), then the
    folders that leaves empty and the manifest when nothing it lists is left; returns the deleted
    paths. A file the manifest does not list is never touched."""
    out_dir = Path(out_dir)
    removed = [name for name in owned_files(out_dir) if name not in keep]
    for name in removed:
        (out_dir / name).unlink(missing_ok=True)
    for folder in sorted(
        {Path(name).parent for name in removed if Path(name).parent != Path(".")}, key=lambda p: -len(p.parts)
    ):
        with contextlib.suppress(OSError):  # not empty: it holds a file sipt-lab did not write
            (out_dir / folder).rmdir()
    if not owned_files(out_dir):
        (out_dir / MANIFEST).unlink(missing_ok=True)
    return removed


def list_for_message(names: list[str], shown: int = 3) -> str:
    """``a, b, c and 4 more``: a few names of a long list for a one-line message."""
    return ", ".join(names[:shown]) + (f" and {len(names) - shown} more" if len(names) > shown else "")


@contextlib.contextmanager
def run_output(
    path: str | Path | None,
    command: str,
    *,
    finished: str,
    resume: bool = False,
    overwrite: bool = False,
    resumable: bool = True,
    replaced_dirs: tuple[str, ...] = (),
    keep_on_failure: Callable[[Path], bool] | None = None,
    main_process: bool = True,
    option: str = "--out",
    log: Callable[[str], None] | None = None,
    inputs: Iterable[str | Path] = (),
) -> Iterator[Path]:
    """The output directory of one run, under the one rule of the module docstring.

    Args:
        path: the directory (created when missing).
        command: the command writing the run (recorded in the manifest: a run of another command
            there is refused, never overwritten).
        finished: the file whose presence marks a finished run (e.g. ``result.json``).
        resume: continue the run there (``resumable`` commands only); overwrite: replace it,
            removing only the files its manifest lists (and saying which). Both together are refused.
        replaced_dirs: folders the run replaces whole (an exported model): a file sipt-lab did not
            write inside one is refused up front, never deleted.
        keep_on_failure: ``out -> bool``, whether a run that fails has left something worth keeping
            (a checkpoint to resume from); if not, the files it wrote are removed, and the directory
            too when it created it and it is empty.
        main_process: False for a ``torchrun`` process other than rank 0, which writes nothing:
            the directory is only checked.
        inputs: the paths the command reads: ``overwrite`` is refused when it would remove one.

    Yields the directory, locked (:func:`hold_lock`) for the block. Record each file with
    :func:`record_files` before writing it.
    """
    log = logger.info if log is None else log  # the CLI passes print: its lines are the command's output
    if resume and overwrite:
        raise SiptError(
            "--resume and --overwrite contradict each other; pass --resume to continue the run, "
            "or --overwrite to replace it"
        )
    if resume and not resumable:
        raise SiptError("this command cannot resume a run; pass --overwrite to replace it, or another " + option)
    out = check_output_dir(path, option)
    if not main_process:
        yield out
        return
    with locked_dir(out, option):
        _recover_killed_overwrite(out, command, finished, keep_on_failure, option, log)
        if overwrite:
            check_inputs_outside(out, inputs, owned_files(out), option)
        replaced = _claim_run(out, command, finished, resume, overwrite, resumable, replaced_dirs, option, log)
        if manifest_command(out) is None:
            write_json_atomic(out / MANIFEST, {"command": command, "files": []})
        before = set(owned_files(out))
        try:
            yield out
        except BaseException:
            if keep_on_failure is None or not keep_on_failure(out):
                remove_owned(out, keep=before)
                if replaced:  # the new run has nothing to put in the old one's place: put it back
                    _move_tree(out / REPLACED_DIR, out, replaced)
                    (out / REPLACED_DIR).rmdir()
                    log(
                        f"--overwrite: the run stopped before it had anything to keep; the earlier run in {out} is back"
                    )
                    replaced = []
            raise
        finally:
            if replaced:
                shutil.rmtree(out / REPLACED_DIR)


def _recover_killed_overwrite(
    out: Path,
    command: str,
    finished: str,
    keep_on_failure: Callable[[Path], bool] | None,
    option: str,
    log: Callable[[str], None],
) -> None:
    """Finish what a killed ``--overwrite`` of ``out`` left: its :data:`REPLACED_DIR`.

    The claim moves the earlier run's manifest last, so a folder without one is a move cut short:
    it goes back. Otherwise the files of ``out``'s manifest are the new run's; when the new run
    finished (``finished``) or left something to keep (``keep_on_failure``), the earlier run is
    deleted, as a run that ends does; else the new run's files are, and the earlier run goes
    back, as a run that fails does. A new run of another command is left to that command."""
    aside = out / REPLACED_DIR
    if not aside.is_dir():
        return
    new = owned_files(out) if (aside / MANIFEST).is_file() else []
    if new and manifest_command(out) != command:
        return
    if new and ((out / finished).is_file() or (keep_on_failure is not None and keep_on_failure(out))):
        shutil.rmtree(aside)
        log(
            f"--overwrite: a run stopped in {out} after it had something to keep; the earlier run it "
            f"replaced, kept aside in {REPLACED_DIR}, is deleted"
        )
        return
    earlier = sorted(path.relative_to(aside).as_posix() for path in aside.rglob("*") if not path.is_dir())
    both = [name for name in earlier if name != MANIFEST and name not in new and (out / name).exists()]
    if both:
        raise SiptError(
            f"{option} {out}: a stopped --overwrite kept the earlier run in {REPLACED_DIR}, but "
            f"{list_for_message(both)} exist(s) there and in {out}; move them out of {out} to get that run back"
        )
    if (aside / MANIFEST).is_file():
        remove_owned(out)
    _move_tree(aside, out, earlier)
    shutil.rmtree(aside)  # empty folders only: one made for a file the kill kept from moving
    log(f"--overwrite: a run stopped in {out} before it had anything to keep; the earlier run it was replacing is back")


def _claim_run(
    out: Path,
    command: str,
    finished: str,
    resume: bool,
    overwrite: bool,
    resumable: bool,
    replaced_dirs: tuple[str, ...],
    option: str,
    log: Callable[[str], None],
) -> list[str]:
    """Refuse ``out`` unless it is free for a run of ``command`` (see :func:`run_output`); with
    ``overwrite`` move the earlier run's files (and manifest) into :data:`REPLACED_DIR` and return
    their paths (relative to ``out``), else return []."""
    ours = owned_files(out)
    if ours and manifest_command(out) != command:
        raise SiptError(
            f"{option} {out} holds the output of {manifest_command(out) or 'another sipt-lab command'}, "
            f"not of a {command} run; pass another {option}"
        )
    if not ours:
        # its top level only: a directory of other files (``/``, a home) is refused without a walk
        foreign = sorted(p.name for p in out.iterdir() if p.name != MANIFEST and not is_lock(p.name))
        if foreign:
            raise SiptError(
                f"{option} {out} holds files sipt-lab did not write ({list_for_message(foreign)}); "
                "pass a new or empty directory (--overwrite removes only files sipt-lab wrote)"
            )
        (out / MANIFEST).unlink(missing_ok=True)
        return []
    in_replaced = [name for folder in replaced_dirs for name in foreign_files(out / folder, out)]
    if in_replaced and (resume or overwrite):
        raise SiptError(
            f"{option} {out} has files sipt-lab did not write inside the folders a run replaces "
            f"({list_for_message(in_replaced)}); move them out of {out}"
        )
    if overwrite:
        _move_tree(out, out / REPLACED_DIR, [*ours, MANIFEST])
        log(
            f"--overwrite: replacing {len(ours)} file(s) sipt-lab wrote in {out} ({list_for_message(ours, 6)}); "
            "they are kept aside until the new run finishes or writes a checkpoint, and put back if it stops before"
        )
        return [*ours, MANIFEST]
    if resume:
        return []
    state = "a finished run" if (out / finished).is_file() else "an unfinished run"
    choices = (
        "pass --resume to continue it, --overwrite to replace it" if resumable else "pass --overwrite to replace it"
    )
    raise SiptError(f"{option} {out} holds {state}; {choices}, or another {option}")


def _move_tree(source: Path, target: Path, names: list[str]) -> None:
    """Move the files ``names`` (paths relative to ``source``) to the same paths under ``target``
    (renames: one file system), then remove the folders of ``source`` that leaves empty."""
    for name in names:
        (target / name).parent.mkdir(parents=True, exist_ok=True)
        (source / name).rename(target / name)
    for folder in sorted(
        {Path(name).parent for name in names if Path(name).parent != Path(".")}, key=lambda p: -len(p.parts)
    ):
        with contextlib.suppress(OSError):  # not empty: it holds a file sipt-lab did not write
            (source / folder).rmdir()


def _manifest_files(manifest: Path, nested: bool = False) -> list[str]:
    """The paths a manifest lists; [] when it is missing or damaged (nothing is then owned). Only
    plain names count, or with ``nested`` relative ``/``-separated paths that stay inside."""
    try:
        names = json.loads(manifest.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    if isinstance(names, dict):  # a run's manifest: {"command", "files"}
        names = names.get("files") if nested else None
    if not isinstance(names, list):
        return []
    return [name for name in names if isinstance(name, str) and _inside(name, nested)]


def _inside(name: str, nested: bool) -> bool:
    parts = name.split("/")
    if not nested and len(parts) != 1:
        return False
    return not name.startswith("/") and "\\" not in name and all(part not in ("", ".", "..") for part in parts)
