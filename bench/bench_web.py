#!/usr/bin/python3
"""Stepformer in a browser against the native build, on the same machine (issue #50).

    bench/bench_web.py NATIVE_BENCH BENCH_PAGE APP_PAGE MODEL [--loads N]

  NATIVE_BENCH   the native bench_forward_lengths (build/bench/web/bench_forward_lengths), run on one thread
                 (OMP_NUM_THREADS=1: the page has one)
  BENCH_PAGE     the same program as a page (the web build's bench-page/: build/web-build/bench-page after
                 tools/stepformer web)
  APP_PAGE       the app's page (build-web/ after tools/stepformer web)
  MODEL          the model both time (the shipped assets/models/de-en.safetensors; the page carries its own copy)
Both pages are served from 127.0.0.1 to headless Chromium (Debian's; WebGL2 drawn by SwiftShader).

Prints, per length (8-128 tokens on each side), the traced forward's median time natively and in the browser and
their ratio; then the app page's load to its first frame (a fresh browser profile each time: nothing cached).
"""
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "web"))
from page_server import Server, chromium_path, close_page, open_page, wait_for  # noqa: E402


def browser_lines(chromium, folder, page, done, seconds):
    with tempfile.TemporaryDirectory() as out, tempfile.TemporaryDirectory(ignore_cleanup_errors=True) as profile:
        server = Server(folder, out, "")
        log = []
        browser = open_page(chromium, "http://127.0.0.1:%d/%s" % (server.port, page), profile)
        try:
            wait_for(server, done, seconds, log)
        finally:
            close_page(browser)
            server.close()
        return log


def main():
    args = sys.argv[1:]
    loads = 3
    if "--loads" in args:
        i = args.index("--loads")
        loads = int(args[i + 1])
        del args[i:i + 2]
    if len(args) != 4:
        print(__doc__)
        return 2
    native_bench, bench_page, app_page, model = args
    chromium = chromium_path()
    if not chromium:
        print("Chromium is not installed (apt-get install chromium)")
        return 1
    # The native build's kernels as this CPU chooses them (AVX-512 here), and forced to AVX2 and to the baseline
    # (x86-64-v2: 128-bit SSE without FMA, the browser's vector width): the browser's gap to each.
    def native(kernels):
        env = dict(os.environ, OMP_NUM_THREADS="1", STEPFORMER_KERNELS=kernels)
        out = subprocess.run([native_bench, model], env=env, capture_output=True, text=True, check=True).stdout
        return [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    sets = ["auto", "avx2", "baseline"]
    natives = {k: native(k) for k in sets}
    web = [json.loads(line) for line in browser_lines(chromium, bench_page, "index.html",
                                                      lambda line: line == "done", 900) if line.startswith("{")]
    print("traced forward pass of %s, median of runs, ms (native: 1 thread, kernels auto = the best this CPU has; "
          "browser: Chromium, WebAssembly SIMD, one thread)" % model)
    print("%7s %10s %10s %10s %10s   %s" % ("tokens", "native", "avx2", "baseline", "browser",
                                            "browser / native, / avx2, / baseline"))
    for i, w in enumerate(web):
        n = [natives[k][i]["ms"] for k in sets]
        print("%7d %10.2f %10.2f %10.2f %10.2f   %.2fx %.2fx %.2fx" % (w["tokens"], n[0], n[1], n[2], w["ms"],
                                                                        w["ms"] / n[0], w["ms"] / n[1], w["ms"] / n[2]))
    firsts = []
    for _ in range(loads):
        log = browser_lines(chromium, app_page, "test.html?driver=load",
                            lambda line: "first frame" in line, 300)
        line = [x for x in log if "first frame" in x][-1]
        firsts.append(int(line.split("first frame ")[1].split(" ")[0]))
        print(line)
    print("page load to first frame (from 127.0.0.1, nothing cached): %s ms" % ", ".join(str(x) for x in firsts))
    return 0


if __name__ == "__main__":
    sys.exit(main())
