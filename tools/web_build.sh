#!/usr/bin/env bash
# Builds Stepformer for the web with Debian's emscripten: the app as a page (index.html, stepformer.js,
# stepformer.wasm, stepformer.data) into PAGE_DIR, stepformer-cli for Node (BUILD_DIR/app/stepformer-cli.js) and the
# forward-pass benchmark's own page (BUILD_DIR/bench-page: bench/bench_web.py).
#   tools/web_build.sh BUILD_DIR PAGE_DIR
# Dear ImGui's source is fetched from Debian's archive and checked (third_party/debian_imgui.cmake); set
# STEPFORMER_DOWNLOAD_DIR to keep the downloads elsewhere than BUILD_DIR/downloads. JOBS: parallel jobs.
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=$1 page=$2
# Debian's emscripten finds its JavaScript tools (acorn) in Debian's Node modules; a Node from elsewhere does not
# look there by itself. Its cache is Debian's, frozen: EM_CACHE must stay unset.
export NODE_PATH=/usr/share/nodejs${NODE_PATH:+:$NODE_PATH}
unset EM_CACHE
args=(-DCMAKE_BUILD_TYPE=Release -DSTEPFORMER_BUILD_TESTS=OFF -DSTEPFORMER_BUILD_BENCHMARKS=OFF -DSTEPFORMER_NATIVE=OFF
      -DSTEPFORMER_CUDA=OFF -DEigen3_DIR=/usr/share/eigen3/cmake "-DSTEPFORMER_WEB_PAGE_DIR=$page")
[ -n "${STEPFORMER_DOWNLOAD_DIR:-}" ] && args+=("-DSTEPFORMER_DOWNLOAD_DIR=$STEPFORMER_DOWNLOAD_DIR")
emcmake cmake -S "$repo" -B "$build" "${args[@]}"
cmake --build "$build" --target stepformer stepformer-cli bench_forward_lengths --parallel "${JOBS:-$(nproc 2>/dev/null || echo 2)}"
echo "the page: $page (index.html, stepformer.js, stepformer.wasm, stepformer.data)"
