#!/bin/sh
# Sanitizer and fuzz run of the model-file code, registered with ctest as `fuzz_safetensors`.
#
#   tests/run_fuzz.sh SOURCE_DIR WORK_DIR [FUZZ_SECONDS]
#
# 1. configures a separate clang build in WORK_DIR/build with AddressSanitizer + UBSan (STEPFORMER_SANITIZE) and
#    the libFuzzer targets (STEPFORMER_FUZZ), building only what it needs: the model-file code, the fuzz target
#    and the model-file unit tests (tests/fuzz/CMakeLists.txt);
# 2. runs those unit tests (safetensors, model files, tokenizer) under ASan + UBSan;
# 3. runs tests/fuzz/fuzz_safetensors_header for FUZZ_SECONDS (default 60) from the seed corpus
#    tests/fuzz/corpus/, keeping what it learns in WORK_DIR/corpus. A crash leaves its input in WORK_DIR/.
# CC and CXX may name the compilers (default clang, clang++), CMAKE_GENERATOR the generator. About 3 to 4
# minutes on 2 cores from scratch.
set -eu
if [ $# -lt 2 ]; then
  echo "usage: $0 SOURCE_DIR WORK_DIR [FUZZ_SECONDS]" >&2
  exit 2
fi
src=$(cd "$1" && pwd)
work=$2
seconds=${3:-60}
build=$work/build
mkdir -p "$work/corpus"
start=$(date +%s)

if [ ! -f "$build/CMakeCache.txt" ]; then
  # the generator: $CMAKE_GENERATOR when set (ctest passes the parent build's), else CMake's default
  CC=${CC:-clang} CXX=${CXX:-clang++} cmake -S "$src" -B "$build" -DCMAKE_BUILD_TYPE=None \
    "-DCMAKE_CXX_FLAGS=-O1 -g" -DSTEPFORMER_FUZZ=ON -DSTEPFORMER_SANITIZE=ON -DSTEPFORMER_BUILD_APP=OFF \
    -DSTEPFORMER_BUILD_BENCHMARKS=OFF -DSTEPFORMER_CUDA=OFF -DSTEPFORMER_NATIVE=OFF >"$work/configure.log" ||
    { cat "$work/configure.log"; exit 1; }
fi
cmake --build "$build" --target fuzz_safetensors_header stepformer_model_file_tests
built=$(date +%s)
echo "run_fuzz.sh: sanitizer build ready in $((built - start)) s"

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}
"$build/tests/fuzz/stepformer_model_file_tests" --gtest_brief=1
tested=$(date +%s)
echo "run_fuzz.sh: model-file unit tests passed under ASan + UBSan in $((tested - built)) s"

"$build/tests/fuzz/fuzz_safetensors_header" -max_total_time="$seconds" -max_len=8192 -timeout=10 \
  -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="$work/" "$work/corpus" "$src/tests/fuzz/corpus"
echo "run_fuzz.sh: fuzzed for $seconds s without a finding; total $(($(date +%s) - start)) s"
