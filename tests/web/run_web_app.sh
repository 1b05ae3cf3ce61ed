#!/usr/bin/env bash
# The app in headless Chromium against the desktop app (tests/web/run_web_app.py): builds the web page once for
# the web tests (tools/web_build.sh, shared with run_web_core.sh under a lock), then runs the check.
#   tests/web/run_web_app.sh SOURCE_DIR BUILD_DIR NATIVE_APP
# Exit 77 (ctest: skipped, with the reason on stdout) where emscripten, Node or Chromium is not installed.
set -euo pipefail
src=$1 build=$2 native=$3
if ! command -v emcmake > /dev/null || ! command -v node > /dev/null; then
  echo "skipped: emscripten or Node is not installed (apt-get install emscripten)"
  exit 77
fi
if ! command -v chromium > /dev/null; then
  echo "skipped: Chromium is not installed (apt-get install chromium)"
  exit 77
fi
mkdir -p "$build/web-build"
flock "$build/web-build.lock" "$src/tools/web_build.sh" "$build/web-build" "$build/web-page" > "$build/web-build.log" 2>&1 \
  || { tail -30 "$build/web-build.log"; exit 1; }
exec /usr/bin/python3 "$src/tests/web/run_web_app.py" "$build/web-page" "$native" "$build/web-app-check"
