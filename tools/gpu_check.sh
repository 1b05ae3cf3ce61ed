#!/bin/bash
# tools/gpu_check.sh [OUT_DIR]: the whole CUDA check on a machine with nvcc and an NVIDIA GPU, as one command.
# Builds the core, the CLI, the tests and the benchmarks with CUDA (no GUI), runs the `cuda` tests and the CPU
# unit tests, and times the GPU forward against PyTorch CUDA eager on the same weights. Writes OUT_DIR/report.md
# (default gpu_check_out/) with every log beside it.
#
# Such a machine may have no Debian -dev packages and no package archive. Prepare them on a Debian 12 machine, in
# the repository root, into .deps/ (ignored by git: echo /.deps/ >> .git/info/exclude):
#   mkdir -p .deps && (cd .deps && apt-get download libeigen3-dev nlohmann-json3-dev libgtest-dev \
#                      libbenchmark-dev libbenchmark1debian libsentencepiece-dev libsentencepiece0)
# and bring .deps/ along. Each .deb is unpacked under /tmp/stepformer-deps (never into /) and CMake looks there.
# Needs there: nvcc (/usr/local/cuda/bin), CMake >= 3.22, a C++20 compiler, python3 with torch (the benchmark).
#
# Options, as environment variables:
#   GPU_CHECK_DATA=DIR            also train the shipped model's recipe on the GPU on Multi30k's tokenized files in DIR
#                                 (train/val/test_2016_flickr .lc.norm.tok.{de,en}) and report each epoch's
#                                 validation BLEU and time; and score the shipped model on the test set with beam 4,
#                                 decoded on the GPU and on the CPU
#   GPU_CHECK_TRAIN_SECONDS=N     stop that run after N seconds (default 600; 0: no training run)
#   GPU_CHECK_TRAIN_ARGS="..."    more options for that run (e.g. --tf32)
#   GPU_CHECK_BENCH=training      only the training benchmark (when time on the GPU machine is short)
#   GPU_CHECK_BENCH=decoding      only the decoding benchmarks (BM_Decoder20, BM_CudaGreedy20, the app's recompute
#                                 after an intervention BM_AppRecompute) and TF32's forward
set -u -o pipefail
cd "$(dirname "$0")/.."
OUT_DIR=${1:-gpu_check_out}
mkdir -p "$OUT_DIR"
OUT_DIR=$(cd "$OUT_DIR" && pwd)
REPORT=$OUT_DIR/report.md
DEPS=/tmp/stepformer-deps
BUILD=${GPU_CHECK_BUILD:-build-gpu}
JOBS=$(nproc)
export PATH=/usr/local/cuda/bin:$PATH

say() { echo "$*" | tee -a "$REPORT"; }
# Runs a step, its output into OUT_DIR/NAME.log; the report gets its status, time and the log's last lines.
step() {
  local name=$1; shift
  local start=$SECONDS
  "$@" >"$OUT_DIR/$name.log" 2>&1
  local rc=$?
  say "### $name: exit $rc, $((SECONDS - start)) s"
  say '```'
  tail -n "${TAIL:-25}" "$OUT_DIR/$name.log" | tee -a "$REPORT"
  say '```'
  return $rc
}

: >"$REPORT"
say "# Stepformer GPU check, $(date -u '+%Y-%m-%d %H:%M UTC'), commit $(git rev-parse --short HEAD 2>/dev/null || echo '?')" \
    "($(git status --porcelain 2>/dev/null | wc -l) paths differ from it)"
say '```'
{ nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>&1 || echo "nvidia-smi failed";
  nvcc --version 2>&1 | tail -n 2; cmake --version | head -n 1; c++ --version | head -n 1; nproc; } | tee -a "$REPORT"
say '```'

mkdir -p "$DEPS"
shopt -s nullglob
debs=(.deps/*.deb)
for deb in "${debs[@]}"; do dpkg -x "$deb" "$DEPS" || { say "cannot unpack $deb"; exit 1; }; done
say "unpacked ${#debs[@]} Debian packages from .deps/ into $DEPS"

generator=()
command -v ninja >/dev/null && generator=(-G Ninja)
step configure cmake -S . -B "$BUILD" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release -DSTEPFORMER_BUILD_APP=OFF \
  -DSTEPFORMER_CUDA=ON -DCMAKE_PREFIX_PATH="$DEPS/usr" -DCMAKE_CUDA_COMPILER=/usr/local/cuda/bin/nvcc \
  ${GPU_CHECK_CMAKE_ARGS:-} || exit 1
step build cmake --build "$BUILD" -j "$JOBS" --target stepformer-cli stepformer_tests stepformer_cuda_tests \
  bench_forward bench_cuda || exit 1
export LD_LIBRARY_PATH=$DEPS/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
step version "$BUILD/app/stepformer-cli" --version
TAIL=40 step cuda_tests ctest --test-dir "$BUILD" -L cuda --output-on-failure -j 4
cuda_rc=$?
TAIL=8 step cpu_unit_tests ctest --test-dir "$BUILD" -LE "cuda|fuzz" --output-on-failure -j "$JOBS"

# The benchmark: the same weights on both sides (bench_forward writes them), one sentence (batch 1) on ours.
export STEPFORMER_BENCH_MODEL=/tmp/stepformer-bench-demo.safetensors
export STEPFORMER_BENCH_MODEL_BASE=/tmp/stepformer-bench-base.safetensors
step bench_models "$BUILD/bench/bench_forward" --benchmark_filter=NONE
if [ "${GPU_CHECK_BENCH:-all}" = training ]; then
  TAIL=8 step bench_cuda_training "$BUILD/bench/bench_cuda" --benchmark_filter=Training --benchmark_min_time=0.3
elif [ "${GPU_CHECK_BENCH:-all}" = decoding ]; then
  TAIL=40 step bench_cuda_decoding "$BUILD/bench/bench_cuda" --benchmark_filter='Decoder20|Greedy20|LogitsBase/|Tf32|AppRecompute' \
    --benchmark_min_time=0.3
else
  TAIL=30 step bench_cuda "$BUILD/bench/bench_cuda" --benchmark_min_time=0.3
  TAIL=40 step bench_pytorch_cuda python3 bench/bench_pytorch_cuda.py "$STEPFORMER_BENCH_MODEL" \
    "$STEPFORMER_BENCH_MODEL_BASE"
  for n in 64 128 256 1024; do
    TAIL=2 step "bench_pytorch_training_cuda_$n" python3 bench/bench_pytorch_training.py --device cuda \
      --sentences "$n" --steps 20
  done
fi
if [ -n "${GPU_CHECK_DATA:-}" ] && [ "${GPU_CHECK_TRAIN_SECONDS:-600}" != 0 ]; then  # the shipped recipe on the GPU
  TAIL=30 step train_de_en_cuda timeout "${GPU_CHECK_TRAIN_SECONDS:-600}" stdbuf -oL -eL "$BUILD/app/stepformer-cli" train \
    --device cuda --data "$GPU_CHECK_DATA" --src de --tgt en --out /tmp/stepformer-gpu-de-en.safetensors \
    --no-resume --epochs 18 --batch-tokens 3000 --lr 1e-3 --warmup 500 --dropout 0.1 --label-smoothing 0.1 \
    --clip 1 --tie-output --seed 1 --threads "$JOBS" ${GPU_CHECK_TRAIN_ARGS:-}
fi
if [ -n "${GPU_CHECK_DATA:-}" ]; then  # the shipped model's test BLEU, beam 4, decoded on the GPU and on the CPU
  for device in cuda cpu; do
    TAIL=4 step "eval_beam4_$device" "$BUILD/app/stepformer-cli" eval --src "$GPU_CHECK_DATA/test_2016_flickr.lc.norm.tok.de" \
      --ref "$GPU_CHECK_DATA/test_2016_flickr.lc.norm.tok.en" --beam 4 --device "$device"
  done
fi
TAIL=6 step translate_cuda "$BUILD/app/stepformer-cli" translate "Zwei Hunde spielen im Schnee." --device cuda
say "cuda tests: exit $cuda_rc"
exit $cuda_rc
