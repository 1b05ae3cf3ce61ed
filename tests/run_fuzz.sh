#!/bin/sh
# Sanitizer and fuzz run of every parser a user can feed, registered with ctest as `fuzz_parsers`.
#
#   tests/run_fuzz.sh SOURCE_DIR WORK_DIR [FUZZ_SECONDS]
#
# 1. configures a separate clang build in WORK_DIR/build with AddressSanitizer + UBSan (STEPFORMER_SANITIZE) and
#    the libFuzzer targets (STEPFORMER_FUZZ), building only what it needs: the parsers' code, the fuzz targets
#    and the model-file unit tests (tests/fuzz/CMakeLists.txt);
# 2. runs those unit tests (safetensors, model files, tokenizer) under ASan + UBSan;
# 3. runs each libFuzzer target for FUZZ_SECONDS (default 20) from its committed corpus
#    tests/fuzz/corpus/<target without fuzz_>/, keeping what it learns in WORK_DIR/corpus/<same>:
#      fuzz_safetensors_header  model files: safetensors header, tensors, model metadata   (-max_len=16384)
#      fuzz_tokenizer           tokenizer settings and text, printable(), SentencePiece models (-max_len=16384)
#      fuzz_script              scripts and lessons (strict and lesson parse)              (-max_len=4096)
#      fuzz_settings            the settings file, in memory and through read_settings     (-max_len=4096)
#      fuzz_cli_options         stepformer-cli's option parser and the app's options       (-max_len=4096)
#      fuzz_hf_marian           a Marian folder's config, vocab, generation, tokenizer, spm (-max_len=16384)
#      fuzz_hf_gpt2             a GPT-2 folder's config, vocab.json, merges.txt; the BPE     (-max_len=32768)
#      fuzz_hf_bert             a BERT folder's config, vocab.txt, tokenizer config; WordPiece (-max_len=4096)
#    Each target's output goes to WORK_DIR/<target>.log; its final stats are printed. A finding (crash,
#    sanitizer report, leak, timeout, out of memory, an exception, a broken invariant) leaves its input in
#    WORK_DIR/<target>-crash-... (or -leak-, -timeout-, -oom-) and the log's end is printed; every target still
#    runs, and the script fails at the end.
# CC and CXX may name the compilers (default clang, clang++), CMAKE_GENERATOR the generator,
# CMAKE_BUILD_PARALLEL_LEVEL the build jobs (default 2). With the default 20 s per target: about 4 minutes on 2
# cores from scratch (the build 2 to 4 of them, more on a busy machine), under 2 minutes once built.
set -eu
if [ $# -lt 2 ]; then
  echo "usage: $0 SOURCE_DIR WORK_DIR [FUZZ_SECONDS]" >&2
  exit 2
fi
src=$(cd "$1" && pwd)
work=$2
seconds=${3:-20}
build=$work/build
targets="fuzz_safetensors_header fuzz_tokenizer fuzz_script fuzz_settings fuzz_cli_options fuzz_hf_marian fuzz_hf_gpt2 fuzz_hf_bert"
mkdir -p "$work/corpus"
start=$(date +%s)

if [ ! -f "$build/CMakeCache.txt" ]; then
  # the generator: $CMAKE_GENERATOR when set (ctest passes the parent build's), else CMake's default
  CC=${CC:-clang} CXX=${CXX:-clang++} cmake -S "$src" -B "$build" -DCMAKE_BUILD_TYPE=None \
    "-DCMAKE_CXX_FLAGS=-O1 -g" -DSTEPFORMER_FUZZ=ON -DSTEPFORMER_SANITIZE=ON -DSTEPFORMER_BUILD_APP=OFF \
    -DSTEPFORMER_BUILD_BENCHMARKS=OFF -DSTEPFORMER_CUDA=OFF -DSTEPFORMER_NATIVE=OFF >"$work/configure.log" ||
    { cat "$work/configure.log"; exit 1; }
fi
# shellcheck disable=SC2086  # $targets is a list of names
cmake --build "$build" --parallel "${CMAKE_BUILD_PARALLEL_LEVEL:-2}" --target $targets stepformer_model_file_tests
built=$(date +%s)
echo "run_fuzz.sh: sanitizer build ready in $((built - start)) s"

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}
"$build/tests/fuzz/stepformer_model_file_tests" --gtest_brief=1
tested=$(date +%s)
echo "run_fuzz.sh: model-file unit tests passed under ASan + UBSan in $((tested - built)) s"

failed=""
for target in $targets; do
  corpus=${target#fuzz_}
  max_len=4096
  [ "$target" = fuzz_safetensors_header ] && max_len=16384  # a seed with SentencePiece models is 11 KB
  [ "$target" = fuzz_hf_marian ] && max_len=16384           # its seeds carry a SentencePiece model
  [ "$target" = fuzz_tokenizer ] && max_len=16384           # so do its spm_* seeds
  [ "$target" = fuzz_hf_gpt2 ] && max_len=32768             # the tiny-gpt2 seed's vocab.json and merges: 25 KB
  mkdir -p "$work/corpus/$corpus"
  t0=$(date +%s)
  if "$build/tests/fuzz/$target" -max_total_time="$seconds" -max_len="$max_len" -timeout=10 -rss_limit_mb=2048 \
    -print_final_stats=1 -artifact_prefix="$work/$target-" "$work/corpus/$corpus" "$src/tests/fuzz/corpus/$corpus" \
    >"$work/$target.log" 2>&1; then
    stats=$(grep -E '^stat::(number_of_executed_units|average_exec_per_sec|new_units_added)' "$work/$target.log" |
      sed 's/^stat:://' | tr -s ' \n' ' ')
    cov=$(grep -E '^#[0-9]+.*(DONE|pulse|NEW|REDUCE|INITED)' "$work/$target.log" | tail -n 1 |
      sed -n 's/.*\(cov: [0-9]*\).*\(ft: [0-9]*\).*/\1 \2/p')
    echo "run_fuzz.sh: $target: no finding in $(($(date +%s) - t0)) s ($stats$cov)"
  else
    echo "run_fuzz.sh: $target FOUND A PROBLEM; the end of $work/$target.log:" >&2
    tail -n 60 "$work/$target.log" >&2
    failed="$failed $target"
  fi
done
if [ -n "$failed" ]; then
  echo "run_fuzz.sh: findings in:$failed (inputs: $work/<target>-crash-*, -leak-*, -timeout-*, -oom-*)" >&2
  exit 1
fi
echo "run_fuzz.sh: every target fuzzed for $seconds s without a finding; total $(($(date +%s) - start)) s"
