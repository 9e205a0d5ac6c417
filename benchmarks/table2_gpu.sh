#!/usr/bin/env bash
# Table 2's wiki row (SIPT against the per-token baseline `lm` and the per-sample baseline
# `multitask`) from one `domain run` on one GPU, within a wall-clock budget.
#
#   OUT=DIR bash benchmarks/table2_gpu.sh BUDGET_SECONDS
#
# Run from the repository root with sipt_lab importable (PYTHONPATH). Writes into $OUT:
#   table2/table2.{md,csv,tex}   the row (`domain table`)
#   run/                         the run's summary.json, comparison.csv, history.csv, config.toml and
#                                every cell's config.json / result.json (no model weights)
#   wiki_heads.tsv               the per-sample pre-training labels (`data convert wiki-descriptions`)
#   scale.txt                    the scale, the seeds finished and the wall times
# Environment: INIT (warm start, default /tmp/minilm: all-MiniLM-L6-v2 in fp32), DEVICE (default
# cuda), MAX_SEEDS (default 3), SAMPLES and STEPS (the scale, instead of the budget's tier: a second
# call that resumes a first must pass the first's), WORK (the run's directory, default a new
# temporary one, removed at the end; a fixed WORK is kept, so a later call resumes its cells),
# TABLE2_TINY=1 (the pipeline on a CPU in minutes: the `cpu` preset, 100 samples, 2 steps, 2 seeds;
# with DEVICE=cpu INIT=minilm).
#
# The scale. Every arm runs the `full` preset's protocol (MiniLM warm start, 128 tokens, pre-training
# batches of 64 at lr 5e-5 in fp32 after a 100-step head warm-up, InfoNCE at λ = 0.1 over the `mentions`
# graph; full fine-tuning over lr 2e-5 / 5e-5 / 1e-4, up to 3 passes of batch 32, plus the linear
# probe) on a snowball slice of --samples articles per seed, for --steps pre-training steps. Arms
# per seed: off-the-shelf, lm, sipt[mentions], multitask. The budget picks the largest tier below
# whose estimate for MAX_SEEDS seeds fits; seeds then run one `domain run` at a time in the same
# directory (--seeds 1, 2, ...: a finished seed's cells are reused), each under `timeout`, and a
# seed is started only while the time left exceeds 1.1x the last seed's, so an underestimate costs
# seeds, never the table.
#
# Estimate per seed, serial on one H100, in seconds (benchmarks/RESULTS.md: the SIPT step of
# MiniLM at 64 x 128 is 37 ms in fp32, 68 ms in bf16, so pre-training runs in fp32, and an lm or
# multitask step is taken as 30 ms; a fine-tuning step of 32 x 128 in fp32 as 15 ms):
#   30                        process start, data and CUDA (12); four cells' model load,
#                             tokenising, embedding (0.2 ms a sample) and probe (12); three
#                             100-step head warm-ups at 20 ms (6)
#   + 0.097 x steps           lm + sipt + multitask pre-training steps (30 + 37 + 30 ms)
#   + 0.013 x samples         four arms x 3 learning rates x up to 3 passes over the train split
#                             (72 % of the samples) in batches of 32 at 15 ms, with evaluation
# PLAN_ONLY=1 prints the scale and its estimate, and exits.
set -uo pipefail

budget=${1:?usage: OUT=DIR bash benchmarks/table2_gpu.sh BUDGET_SECONDS}
: "${OUT:?set OUT to the output folder}"
init=${INIT:-/tmp/minilm}
device=${DEVICE:-cuda}
max_seeds=${MAX_SEEDS:-3}
reserve=15 # seconds kept for `domain table` and the copies
py=(python3 -m sipt_lab.cli.main)

# tiers: samples steps, largest last
tiers=("300 20" "800 50" "1200 80" "1500 80" "2000 100" "3000 200" "6000 500" "10033 1000" "10033 2000")
estimate() { awk -v n="$1" -v s="$2" -v k="$3" 'BEGIN { printf "%d", k * (30 + 0.097 * s + 0.013 * n) }'; }
samples=0
for tier in "${tiers[@]}"; do
    read -r n s <<<"$tier"
    if (($(estimate "$n" "$s" "$max_seeds") <= budget - reserve)); then samples=$n steps=$s; fi
done
preset=full precision=fp32
if [[ -n ${SAMPLES:-} ]]; then samples=$SAMPLES steps=${STEPS:?set STEPS with SAMPLES}; fi
if [[ ${TABLE2_TINY:-0} == 1 ]]; then preset=cpu samples=100 steps=2 max_seeds=2 precision=auto; fi
if ((samples == 0)); then
    echo "budget ${budget}s is below the smallest tier's estimate ($(estimate 300 20 "$max_seeds")s)" >&2
    exit 2
fi
scale="wiki:category, preset $preset, --samples $samples per seed, --steps $steps, --precision $precision, --lambdas 0.1, --graphs mentions,"
scale+=" --methods multitask, --mode both, --init $init, --device $device, --executor serial, up to $max_seeds seeds"
echo "scale: $scale"
echo "estimate: $(estimate "$samples" "$steps" 1)s per seed, $(estimate "$samples" "$steps" "$max_seeds")s for $max_seeds seeds"
[[ ${PLAN_ONLY:-0} == 1 ]] && exit 0
work=${WORK:-$(mktemp -d)}
run="$work/run"
mkdir -p "$OUT"

began=$(date +%s)
deadline=$((began + budget - reserve))
echo "start: $(date -u +%FT%TZ)"
timed() { # label, timeout seconds, command...
    local label=$1 limit=$2 t0 rc
    shift 2
    t0=$(date +%s)
    echo "[$(date -u +%T)] $label: start (timeout ${limit}s)"
    timeout --kill-after=5 "$limit" "$@"
    rc=$?
    echo "[$(date -u +%T)] $label: rc $rc after $(($(date +%s) - t0))s"
    return $rc
}

timed labels 60 "${py[@]}" data convert wiki-descriptions --out "$OUT/wiki_heads.tsv" || exit 1

seeds_done=0 last=0
for ((k = 1; k <= max_seeds; k++)); do
    left=$((deadline - $(date +%s)))
    if ((left <= 0 || (k > 1 && left * 10 < last * 11))); then
        echo "not starting seed $((k - 1)): ${left}s left, the last seed took ${last}s"
        break
    fi
    t0=$(date +%s)
    timed "domain run --seeds $k" "$left" "${py[@]}" domain run wiki --graphs mentions --task category \
        --preset "$preset" --samples "$samples" --steps "$steps" --precision "$precision" --lambdas 0.1 --mode both \
        --methods multitask --pt-labels "$OUT/wiki_heads.tsv" --allow-missing \
        --init "$init" --device "$device" --executor serial --seeds "$k" --out "$run" || break
    seeds_done=$k last=$(($(date +%s) - t0))
done

if ((seeds_done == 0)); then
    echo "no seed finished within the budget; nothing to tabulate" >&2
    status=1
else
    timed "domain table" 30 "${py[@]}" domain table "$run" --out "$OUT/table2"
    status=$?
fi
mkdir -p "$OUT/run"
for name in summary.json comparison.csv history.csv config.toml; do
    [[ -f $run/$name ]] && cp "$run/$name" "$OUT/run/"
done
if [[ -d $run/cells ]]; then
    (cd "$run" && find cells -maxdepth 2 \( -name result.json -o -name config.json \) -exec cp --parents {} "$OUT/run/" \;)
fi
ended=$(date +%s)
{
    echo "scale: $scale"
    echo "seeds finished: $seeds_done$( ((seeds_done)) && echo " (0 .. $((seeds_done - 1)))")"
    echo "budget: ${budget}s; wall: $((ended - began))s from $(date -u -d "@$began" +%FT%TZ) to $(date -u -d "@$ended" +%FT%TZ)"
    echo "device: $(timeout 20 python3 -c 'import torch; print(torch.cuda.get_device_name() if torch.cuda.is_available() else "cpu")')"
} | tee "$OUT/scale.txt"
[[ -z ${WORK:-} ]] && rm -rf "$work"
exit "$status"
