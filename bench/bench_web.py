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
from page_server import Server, chromium_path, open_page, wait_for  # noqa: E402


def browser_lines(chromium, folder, page, done, seconds):
    with tempfile.TemporaryDirectory() as out, tempfile.TemporaryDirectory() as profile:
        server = Server(folder, out, "")
        log = []
        browser = open_page(chromium, "http://127.0.0.1:%d/%s" % (server.port, page), profile)
        try:
            wait_for(server, done, seconds, log)
        finally:
            browser.kill()
            browser.wait()
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
    env = dict(os.environ, OMP_NUM_THREADS="1")
    native = [json.loads(line) for line in subprocess.run([native_bench, model], env=env, capture_output=True,
                                                          text=True, check=True).stdout.splitlines()
              if line.startswith("{")]
    web = [json.loads(line) for line in browser_lines(chromium, bench_page, "index.html",
                                                      lambda line: line == "done", 900) if line.startswith("{")]
    print("traced forward pass of %s, median of runs (native: 1 thread; browser: Chromium, WebAssembly)" % model)
    print("%7s %12s %12s %8s" % ("tokens", "native ms", "browser ms", "ratio"))
    for n, w in zip(native, web):
        print("%7d %12.2f %12.2f %7.2fx" % (n["tokens"], n["ms"], w["ms"], w["ms"] / n["ms"]))
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
