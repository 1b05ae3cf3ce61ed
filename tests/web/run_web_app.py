#!/usr/bin/python3
"""The app in a web browser does what the desktop app does (issue #50).

    tests/web/run_web_app.py PAGE_DIR NATIVE_APP OUT_DIR

PAGE_DIR is the web build's page (tools/web_build.sh); NATIVE_APP the desktop app of the same source. A local
server serves the page to headless Chromium (Debian's package; WebGL2 drawn by SwiftShader, on the CPU) with the
test's driver (tests/web/driver.js), and:
  1. plays the walkthrough lesson to its end, presenting, pressing Space at each of its pauses (the page reports
     each pause on its console, relayed to the server);
  2. runs a script that takes screenshots of the tokens, cross-attention and decoding stages and exports the
     cross-attention tensor (NPY), which the page hands to the browser as downloads (relayed to the server);
  3. runs the same script in the desktop app (under xvfb-run) and checks the translation is the same and the
     exported tensor equal within 1e-4;
  4. drops a model file (the shipped French one, as a user's own) onto the page: the app opens it, and the
     browser's storage keeps it among the recent models for the next visit.
The screenshots stay in OUT_DIR to be looked at. Exit 77 (ctest: skipped, with the reason) where Chromium is
not installed.
"""
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import time

from page_server import SIZE, Server, chromium_path, close_page, open_page, wait_for

# The stages the issue names, as pictures; then an intervention (a head of the encoder off) and a beam search,
# whose tensor and translation the desktop app must give too.
CHECK_SCRIPT = """\
stage tokens
screenshot web-tokens.png
attention cross.1.1
stage cross-attention
screenshot web-cross-attention.png
export-npy web-cross-attention.npy
stage decoding
screenshot web-decoding.png
layout web-layout.json
head-off enc.1.4
decode beam 3
stage cross-attention
export-npy web-cross-attention-head-off.npy
layout web-layout-head-off.json
quit
"""


def read_npy(path):
    with open(path, "rb") as f:
        data = f.read()
    assert data[:6] == b"\x93NUMPY", path + " is not an NPY file"
    header_len = struct.unpack("<H", data[8:10])[0]
    header = data[10:10 + header_len].decode("latin-1")
    shape = tuple(int(x) for x in re.search(r"'shape': \(([^)]*)\)", header).group(1).split(",") if x.strip())
    count = 1
    for n in shape:
        count *= n
    values = struct.unpack("<%df" % count, data[10 + header_len:10 + header_len + 4 * count])
    return shape, values


def compare_tensors(out_dir, name, failures):
    """The page's export of `name` against the desktop app's: the same shape, floats within 1e-4."""
    web_npy, desktop_npy = os.path.join(out_dir, "web-" + name), os.path.join(out_dir, "desktop-" + name)
    if not (os.path.isfile(web_npy) and os.path.isfile(desktop_npy)):
        failures.append("no %s from the page or the desktop" % name)
        return
    (ws, wv), (ds, dv) = read_npy(web_npy), read_npy(desktop_npy)
    if ws != ds:
        failures.append("%s: the shape differs: web %s, desktop %s" % (name, ws, ds))
        return
    worst = max(abs(a - b) for a, b in zip(wv, dv))
    print("%s %s: largest difference %.3g" % (name, ws, worst))
    if not worst <= 1e-4:
        failures.append("%s differs by %.3g (more than 1e-4)" % (name, worst))
    if max(wv) <= 0:
        failures.append(name + " is all zeros")


def main():
    page_dir, native_app, out_dir = (os.path.abspath(p) for p in sys.argv[1:4])
    chromium = chromium_path()
    if not chromium:
        print("skipped: Chromium is not installed (apt-get install chromium)")
        return 77
    if not os.path.isfile(os.path.join(page_dir, "stepformer.wasm")):
        print("no web build in " + page_dir + " (tools/web_build.sh makes it)")
        return 1
    os.makedirs(out_dir, exist_ok=True)
    for name in os.listdir(out_dir):
        os.remove(os.path.join(out_dir, name))
    source = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    server = Server(page_dir, out_dir, CHECK_SCRIPT, os.path.join(source, "assets", "models", "fr-en.safetensors"))
    failures = []
    try:
        # 1. The walkthrough, presenting, to its end.
        log = []
        started = time.monotonic()
        with tempfile.TemporaryDirectory(ignore_cleanup_errors=True) as profile:
            browser = open_page(chromium, "http://127.0.0.1:%d/test.html?lesson=walkthrough&present=1&driver=lesson"
                                % server.port, profile)
            try:
                wait_for(server, lambda line: "lesson finished" in line, 600, log)
            finally:
                close_page(browser)
        pauses = sorted({int(m.group(1)) for line in log for m in [re.search(r"lesson pause (\d+)/(\d+)", line)] if m})
        total = {int(m.group(2)) for line in log for m in [re.search(r"lesson pause (\d+)/(\d+)", line)] if m}
        print("walkthrough: %d pauses passed of %s, finished in %.0f s"
              % (len(pauses), sorted(total), time.monotonic() - started))
        if not total or pauses != list(range(1, max(total) + 1)):
            failures.append("the walkthrough did not pass every pause in order: %s of %s" % (pauses, sorted(total)))
        lesson_translation = [line.split("; translation: ", 1)[1] for line in log if "lesson finished" in line][-1]

        # 2. The script in the page: screenshots and an exported tensor, as downloads.
        log = []
        with tempfile.TemporaryDirectory(ignore_cleanup_errors=True) as profile:
            browser = open_page(chromium, "http://127.0.0.1:%d/test.html?driver=script" % server.port, profile)
            try:
                wait_for(server, lambda line: line == "stepformer-page: exit 0", 300, log)
            finally:
                close_page(browser)
        web_translation = [line.split("; translation: ", 1)[1] for line in log if "; translation: " in line][-1]
        for name in ("web-tokens.png", "web-cross-attention.png", "web-decoding.png", "web-cross-attention.npy",
                     "web-layout.json"):
            path = os.path.join(out_dir, name)
            if not os.path.isfile(path) or os.path.getsize(path) == 0:
                failures.append("the page handed over no " + name)
        for name in ("web-tokens.png", "web-cross-attention.png", "web-decoding.png"):
            path = os.path.join(out_dir, name)
            if os.path.isfile(path):
                with open(path, "rb") as f:
                    head = f.read(24)
                w, h = struct.unpack(">II", head[16:24])
                # The page's size: the window's less what headless Chromium keeps for itself (1280x657 in 156).
                if head[:8] != b"\x89PNG\r\n\x1a\n" or w != SIZE[0] or not 600 <= h <= SIZE[1]:
                    failures.append("%s: not a PNG of the page's size (%dx%d)" % (name, w, h))

        # 3. The desktop app, same script, same size.
        with tempfile.TemporaryDirectory() as work:
            desktop_script = CHECK_SCRIPT.replace("web-", "desktop-")
            with open(os.path.join(work, "check.script"), "w") as f:
                f.write(desktop_script)
            # The page's default model: the word model (the web build reads no SentencePiece, so not the desktop's
            # default, the subword translator).
            word_model = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                                      "assets", "models", "de-en.safetensors")
            run = subprocess.run(["xvfb-run", "-a", "-s", "-screen 0 %dx%dx24" % SIZE, native_app, "--no-settings",
                                  "--model", word_model, "--size", "%dx%d" % SIZE, "--script", "check.script"], cwd=work,
                                 capture_output=True, text=True, timeout=600)
            if run.returncode != 0:
                failures.append("the desktop app failed (%d): %s" % (run.returncode, run.stderr[-2000:]))
            for name in ("desktop-cross-attention.npy", "desktop-layout.json", "desktop-cross-attention.png",
                         "desktop-cross-attention-head-off.npy", "desktop-layout-head-off.json"):
                if os.path.isfile(os.path.join(work, name)):
                    shutil.copy(os.path.join(work, name), out_dir)
        desktop_layout = os.path.join(out_dir, "desktop-layout.json")
        web_layout = os.path.join(out_dir, "web-layout.json")
        if os.path.isfile(desktop_layout) and os.path.isfile(web_layout):
            with open(desktop_layout, encoding="utf-8") as f:
                desktop = json.load(f)["app"]
            with open(web_layout, encoding="utf-8") as f:
                web = json.load(f)["app"]
            print("translation: web '%s', desktop '%s', after the lesson '%s'"
                  % (web["translation"], desktop["translation"], lesson_translation))
            if web["translation"] != desktop["translation"] or web_translation != desktop["translation"]:
                failures.append("translations differ: web '%s' (reported '%s'), desktop '%s'"
                                % (web["translation"], web_translation, desktop["translation"]))
            if lesson_translation != desktop["translation"]:
                failures.append("after the walkthrough the page shows '%s', the desktop '%s'"
                                % (lesson_translation, desktop["translation"]))
            if web["stage"] != "decoding":
                failures.append("the page's last stage is " + web["stage"])
        for suffix in ("", "-head-off"):
            web_layout = os.path.join(out_dir, "web-layout%s.json" % suffix)
            desktop_layout = os.path.join(out_dir, "desktop-layout%s.json" % suffix)
            if not (os.path.isfile(web_layout) and os.path.isfile(desktop_layout)):
                failures.append("no layout%s from the page or the desktop" % suffix)
                continue
            with open(web_layout, encoding="utf-8") as f:
                web = json.load(f)["app"]["translation"]
            with open(desktop_layout, encoding="utf-8") as f:
                desktop = json.load(f)["app"]["translation"]
            if suffix:
                print("with enc.1.4 off, beam 3: web '%s', desktop '%s'" % (web, desktop))
            if web != desktop:
                failures.append("translations%s differ: web '%s', desktop '%s'" % (suffix, web, desktop))
            compare_tensors(out_dir, "cross-attention%s.npy" % suffix, failures)

        # 4. A model file dropped onto the page, and the settings the browser keeps.
        log = []
        with tempfile.TemporaryDirectory(ignore_cleanup_errors=True) as profile:
            browser = open_page(chromium, "http://127.0.0.1:%d/test.html?driver=drop&file=fr-en.safetensors"
                                % server.port, profile)
            try:
                wait_for(server, lambda line: line.startswith("settings kept: "), 300, log)
            finally:
                close_page(browser)
        opened = [line for line in log if line.startswith("stepformer-page: model ") and "fr-en.safetensors" in line]
        print("dropped: " + (opened[-1] if opened else "nothing opened"))
        if not opened or "/.glfw_dropped_files/fr-en.safetensors;" not in opened[-1]:
            failures.append("the dropped model did not open: " + "; ".join(log[-5:]))
        kept = json.loads(log[-1][len("settings kept: "):])
        if not kept or "/.glfw_dropped_files/fr-en.safetensors" not in json.loads(kept).get("recent_models", []):
            failures.append("the browser keeps no settings naming the dropped model: %r" % kept)
    except AssertionError as e:
        failures.append(str(e))
    finally:
        server.close()
    print("screenshots: " + out_dir)
    for f in failures:
        print("FAILED: " + f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
