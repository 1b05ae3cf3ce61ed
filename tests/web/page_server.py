"""A web page's folder served to headless Chromium, with a test's or a benchmark's routes beside it.

Used by tests/web/run_web_app.py and bench/bench_web.py. The server listens on 127.0.0.1 only, on a free port:
  GET  /test.html               the folder's index.html with /__test/driver.js loaded before its own script
  GET  /__test/driver.js        tests/web/driver.js
  GET  /__test/check.script     the script given to Server (the driver hands it to the app as --script)
  GET  /__test/drop/NAME        the file `drop_file` names (the driver drops it onto the page)
  POST /__test/report           one line the page reports (queued: Server.reports)
  PUT  /__test/upload/NAME      a file the page hands over (written to OUT_DIR/NAME)
"""
import http.server
import os
import queue
import re
import shutil
import signal
import subprocess
import threading
import time
import urllib.parse

HERE = os.path.dirname(os.path.abspath(__file__))
SIZE = (1280, 800)  # the browser window; the page inside is smaller by what headless Chromium keeps


def chromium_path():
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    return None


class Server:
    """The page's folder over HTTP on 127.0.0.1, with the test's own routes under /__test/."""

    def __init__(self, page_dir, out_dir, script, drop_file=None):
        self.reports = queue.Queue()
        outer = self

        class Handler(http.server.SimpleHTTPRequestHandler):
            def __init__(self, *args, **kwargs):
                super().__init__(*args, directory=page_dir, **kwargs)

            def log_message(self, *args):
                pass

            def send_bytes(self, body, kind):
                self.send_response(200)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(body)))
                self.send_header("Cache-Control", "no-store")
                self.end_headers()
                self.wfile.write(body)

            def do_GET(self):
                path = urllib.parse.urlparse(self.path).path
                if path == "/test.html":  # the page as served, with the driver before its own script
                    with open(os.path.join(page_dir, "index.html"), encoding="utf-8") as f:
                        html = f.read()
                    html = html.replace("<script>", '<script src="/__test/driver.js"></script>\n<script>', 1)
                    return self.send_bytes(html.encode(), "text/html; charset=utf-8")
                if path == "/__test/driver.js":
                    with open(os.path.join(HERE, "driver.js"), "rb") as f:
                        return self.send_bytes(f.read(), "text/javascript")
                if path == "/__test/check.script":
                    return self.send_bytes(script.encode(), "text/plain; charset=utf-8")
                if drop_file and path == "/__test/drop/" + os.path.basename(drop_file):
                    with open(drop_file, "rb") as f:
                        return self.send_bytes(f.read(), "application/octet-stream")
                return super().do_GET()

            def read_body(self):
                return self.rfile.read(int(self.headers.get("Content-Length", "0")))

            def do_POST(self):
                if self.path == "/__test/report":
                    outer.reports.put(self.read_body().decode("utf-8", "replace"))
                    return self.send_bytes(b"ok", "text/plain")
                self.send_error(404)

            def do_PUT(self):
                m = re.match(r"^/__test/upload/([A-Za-z0-9._-]+)$", urllib.parse.unquote(self.path))
                if not m:
                    return self.send_error(404)
                with open(os.path.join(out_dir, m.group(1)), "wb") as f:
                    f.write(self.read_body())
                outer.reports.put("uploaded " + m.group(1))
                return self.send_bytes(b"ok", "text/plain")

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.httpd.server_address[1]
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self):
        self.httpd.shutdown()


def open_page(chromium, url, profile):
    # --no-sandbox: the tests run as root, where Chromium's sandbox refuses to start. SwiftShader: WebGL2 on the
    # CPU, as on a machine without a GPU.
    args = [chromium, "--headless=new", "--no-sandbox", "--use-angle=swiftshader", "--enable-unsafe-swiftshader",
            "--no-first-run", "--disable-extensions", "--user-data-dir=" + profile,
            "--window-size=%d,%d" % SIZE, url]
    # A session of its own: close_page ends the browser's every process (renderer, GPU), not only the first.
    return subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)


def close_page(browser):
    """Ends the browser started by open_page, all its processes, and waits for them."""
    try:
        os.killpg(browser.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    browser.wait()
    # Its children are in the same group; give them a moment to be gone before the profile folder is removed.
    for _ in range(50):
        try:
            os.killpg(browser.pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.1)


def wait_for(server, done, seconds, log):
    """Reads the page's reports until done(line) is true; the lines seen. Fails on a page error or exit."""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        try:
            line = server.reports.get(timeout=1)
        except queue.Empty:
            continue
        log.append(line)
        if line.startswith("page error") or re.match(r"stepformer-page: exit [1-9]", line):
            raise AssertionError("the page stopped: " + line)
        if done(line):
            return
    raise AssertionError("timed out after %d s; the page's last reports:\n  %s" % (seconds, "\n  ".join(log[-10:])))
