#!/usr/bin/env bash
# The core in WebAssembly translates as the native build does (issue #50): builds stepformer-cli with Debian's
# emscripten (emcmake: no threads, no SentencePiece; third_party/stepformer_dependencies.cmake) into
# BUILD_DIR/web-build (with the web page: tools/web_build.sh), runs it under Node on the shipped models, and
# compares every translation with the native stepformer-cli's, word for word.
#   tests/web/run_web_core.sh SOURCE_DIR BUILD_DIR NATIVE_CLI
# Exit 77 (ctest: skipped, with the reason on stdout) where emscripten or Node is not installed.
set -euo pipefail
src=$1 build=$2 native=$3
if ! command -v emcmake > /dev/null || ! command -v node > /dev/null; then
  echo "skipped: emscripten or Node is not installed (apt-get install emscripten)"
  exit 77
fi
# The web build the web tests share (tools/web_build.sh: the page and this CLI), made once: the second test to come
# waits on the lock and finds it built.
export NODE_PATH=/usr/share/nodejs${NODE_PATH:+:$NODE_PATH}
out="$build/web-build"
mkdir -p "$out"
flock "$build/web-build.lock" "$src/tools/web_build.sh" "$out" "$build/web-page" > "$build/web-build.log" 2>&1 \
  || { tail -30 "$build/web-build.log"; exit 1; }
wasm_cli=("node")
# emscripten 3.1.6's loader fetches the .wasm with fetch() wherever fetch exists, which a Node that has it
# (18 and later) refuses for a file path: without it, the loader reads the file.
if node --no-experimental-fetch -e 0 2> /dev/null; then wasm_cli+=(--no-experimental-fetch); fi
wasm_cli+=("$out/app/stepformer-cli.js")
status=0
while IFS='|' read -r model sentence; do
  want=$("$native" translate "$src/assets/models/$model" "$sentence")
  got=$("${wasm_cli[@]}" translate "$src/assets/models/$model" "$sentence")
  if [[ "$got" == "$want" ]]; then
    echo "same: $model: $sentence -> $got"
  else
    echo "DIFFERENT: $model: $sentence"
    echo "  native: $want"
    echo "  wasm:   $got"
    status=1
  fi
done << 'SENTENCES'
de-en.safetensors|Ein Mann in einem orangefarbenen Hemd steht auf der Straße.
de-en.safetensors|Zwei Hunde spielen im Schnee.
de-en.safetensors|Eine Frau mit einem roten Hut liest ein Buch im Park, während Kinder Fußball spielen.
fr-en.safetensors|Un homme en chemise orange se tient dans la rue.
SENTENCES
# A Marian model needs SentencePiece, which the web build has not: the CLI says so, by name, and exits non-zero.
marian="$src/tests/fixtures/marian/tiny-de-en"
if [[ -d "$marian" ]]; then
  if msg=$("${wasm_cli[@]}" info "$marian" 2>&1); then
    echo "a Marian model opened in a build without SentencePiece: $msg"; status=1
  elif ! grep -q "SentencePiece" <<< "$msg"; then
    echo "the refusal of a Marian model does not name SentencePiece: $msg"; status=1
  else
    echo "refused as it should be: $(head -1 <<< "$msg")"
  fi
fi
exit $status
