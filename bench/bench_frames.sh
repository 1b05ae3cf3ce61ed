#!/usr/bin/env bash
# Frame times of the app while interventions are switched on and off (bench/frames/interventions.script): the
# frame that applies a change recomputes the translation and redraws every view, and should fit in one frame
# (16.7 ms at 60 Hz). Runs the app under a virtual display (xvfb-run, Mesa's software OpenGL), once per stage
# named, and prints for each stage the frames that recomputed, then the median of the others (redraw only).
#   bench/bench_frames.sh [STAGE...]      (default: decoder-attention interventions all-heads)
# Environment: BUILD_DIR (default build), REPEAT (runs per stage, default 3), SCRIPT (default
# bench/frames/interventions.script; bench/frames/interventions_long.script: the same on a 237-token sentence),
# MODEL and SENTENCE (the model and sentence or prompt to open; default the app's).
# GPT-2 small's size at 128 tokens (bench/frames/gpt2_heads.script says how):
#   STEPFORMER_BENCH_GPT2=/tmp/gpt2.safetensors build/bench/bench_gpt2 --benchmark_filter=none
#   MODEL=/tmp/gpt2.safetensors SENTENCE="$(printf 'a%.0s' {1..104})" SCRIPT=bench/frames/gpt2_heads.script \
#     bench/bench_frames.sh decoder-attention all-heads
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build_dir=${BUILD_DIR:-$repo/build}
app=$build_dir/app/stepformer
[ -x "$app" ] || { echo "bench_frames: build the app first ($app is missing)" >&2; exit 1; }
stages=("$@")
[ ${#stages[@]} -eq 0 ] && stages=(decoder-attention interventions all-heads)
log=$(mktemp)
trap 'rm -f "$log"' EXIT
for stage in "${stages[@]}"; do
  for run in $(seq "${REPEAT:-3}"); do
    extra=()
    [ -n "${MODEL:-}" ] && extra+=(--model "$MODEL")
    [ -n "${SENTENCE:-}" ] && extra+=(--sentence "$SENTENCE")
    xvfb-run -a -s "-screen 0 1280x800x24" "$app" --no-settings --stage "$stage" --frame-log "$log" "${extra[@]}" \
      --script "${SCRIPT:-$repo/bench/frames/interventions.script}" >/dev/null
    echo "== stage $stage, run $run: frames that recomputed: frame ms = build (recompute included) + draw"
    awk '!/^#/ && $5 != "-" && NR > 12 {
           printf "  %5.1f ms = %5.1f + %4.1f  (recompute %5.1f)  ", $2, $3, $4, $5; $1 = $2 = $3 = $4 = $5 = ""
           sub(/^ +/, ""); print }' "$log"
    awk '!/^#/ && $5 == "-" && NR > 12 { print $2 }' "$log" | sort -n |
      awk '{ v[NR] = $1 } END { if (NR) printf "  other frames: median %.1f ms, max %.1f ms (%d frames)\n", v[int((NR + 1) / 2)], v[NR], NR }'
  done
done
