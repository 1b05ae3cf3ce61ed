#include "web/browser.h"

#include <emscripten/emscripten.h>
#include <emscripten/html5.h>

#include <cstdio>
#include <string>
#include <vector>

#include "util/printable.h"

namespace {

std::vector<std::string> g_chosen_files;  // arrived from the file picker, not yet taken by a frame

}  // namespace

// Called by the page when the user chose a file in the picker and its bytes are in the memory file system.
extern "C" EMSCRIPTEN_KEEPALIVE void stepformer_file_chosen(const char* path) {
  if (path && *path) g_chosen_files.emplace_back(path);
}

// The page's side, in JavaScript. GLFW and Browser are emscripten's own objects (library_glfw.js,
// library_browser.js); FS its memory file system.
// clang-format off
EM_JS(void, js_start_page, (), {
  if (typeof Module.stepformerStarted === 'function') Module.stepformerStarted();
});

EM_JS(void, js_fit_canvas_to_page, (), {
  var win = GLFW.active;
  if (!win) return;
  var w = Math.max(320, window.innerWidth | 0), h = Math.max(240, window.innerHeight | 0);
  if (win.width === w && win.height === h) return;
  // As GLFW's own resize does (onCanvasResize), without its rule that a size equal to the screen's means
  // "go full screen": a maximised browser on a small screen is just a large page.
  win.width = w;
  win.height = h;
  Browser.setCanvasSize(w, h, true);
  GLFW.onWindowSizeChanged();
  GLFW.onFramebufferSizeChanged();
});

EM_JS(void, js_choose_file, (const char* accept), {
  var input = document.createElement('input');
  input.type = 'file';
  input.accept = UTF8ToString(accept);
  input.style.display = 'none';
  input.onchange = function() {
    var file = input.files && input.files[0];
    document.body.removeChild(input);
    if (!file) return;
    file.arrayBuffer().then(function(bytes) {
      // One folder per choice: a second file of the same name never replaces the model on show.
      var folder = '/uploads/' + Date.now();
      FS.mkdirTree(folder);
      var path = folder + '/' + file.name.split('/').join('_');
      FS.writeFile(path, new Uint8Array(bytes));
      var n = lengthBytesUTF8(path) + 1, p = _malloc(n);
      stringToUTF8(path, p, n);
      _stepformer_file_chosen(p);
      _free(p);
    }, function(error) { err('stepformer: cannot read ' + file.name + ': ' + error); });
  };
  document.body.appendChild(input);
  input.click();
});

EM_JS(void, js_offer_download, (const char* c_path), {
  var path = UTF8ToString(c_path);
  var bytes;
  try {
    bytes = FS.readFile(path);
  } catch (e) {
    err('stepformer: cannot hand ' + path + ' to the browser: ' + e);
    return;
  }
  var name = path.split('/').pop();
  if (typeof Module.stepformerDownload === 'function') { Module.stepformerDownload(name, bytes); return; }
  var url = URL.createObjectURL(new Blob([bytes]));
  var a = document.createElement('a');
  a.href = url;
  a.download = name;
  document.body.appendChild(a);
  a.click();
  document.body.removeChild(a);
  setTimeout(function() { URL.revokeObjectURL(url); }, 60000);
});

EM_JS(void, js_keep_settings, (const char* text), {
  try { window.localStorage.setItem('stepformer.settings', UTF8ToString(text)); }
  catch (e) { err('stepformer: the browser keeps no settings for this page (' + e + ')'); }
});

EM_JS(void, js_report, (const char* line), {
  var text = UTF8ToString(line);
  console.log(text);
  if (typeof Module.stepformerReport === 'function') Module.stepformerReport(text);
});
// clang-format on

namespace sf::web {

void start_page() { js_start_page(); }

void fit_canvas_to_page() { js_fit_canvas_to_page(); }

void choose_file(const std::string& accept) { js_choose_file(accept.c_str()); }

std::vector<std::string> take_chosen_files() {
  std::vector<std::string> out;
  out.swap(g_chosen_files);
  return out;
}

void offer_download(const std::string& path) { js_offer_download(path.c_str()); }

void keep_settings(const std::string& text) { js_keep_settings(text.c_str()); }

void request_fullscreen(bool on) {
  if (on) {
    // Deferred to the next click or key press when asked from a frame, as browsers allow only those to.
    EmscriptenFullscreenStrategy strategy{};
    strategy.scaleMode = EMSCRIPTEN_FULLSCREEN_SCALE_STRETCH;
    strategy.canvasResolutionScaleMode = EMSCRIPTEN_FULLSCREEN_CANVAS_SCALE_STDDEF;
    strategy.filteringMode = EMSCRIPTEN_FULLSCREEN_FILTERING_DEFAULT;
    emscripten_request_fullscreen_strategy("#canvas", EM_TRUE, &strategy);
  } else {
    emscripten_exit_fullscreen();
  }
}

void report_progress(const PageProgress& now, const std::function<std::string()>& translation_text) {
  static PageProgress last;
  if (now == last) return;
  const std::string translation = "; translation: " + printable(translation_text());
  if (now.script) {
    std::string line = "stepformer-page: ";
    if (now.lesson)
      line += now.finished  ? "lesson finished"
              : now.waiting ? "lesson pause " + std::to_string(now.pause) + "/" + std::to_string(now.pauses)
                            : "lesson playing";
    else
      line += now.finished ? "script finished" : "script running";
    js_report((line + translation).c_str());
  }
  if (!now.model_path.empty() && (now.model_path != last.model_path || now.translation != last.translation))
    js_report(("stepformer-page: model " + printable(now.model_path) + translation).c_str());
  last = now;
}

void report_exit(int code) {
  const std::string line = "stepformer-page: exit " + std::to_string(code);
  js_report(line.c_str());
}

}  // namespace sf::web
