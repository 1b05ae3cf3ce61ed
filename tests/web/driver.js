// The test's hands on the web page (tests/web/run_web_app.py): loaded before the page's own script, only by the
// test's copy of the page (test.html, made by the test's server; the page served to users has no driver).
// It reports every "stepformer-page:" line to the server, presses Space at each lesson pause (as a presenter's
// clicker would: a key event on the window, which the app reads through GLFW), and sends the files the app hands
// to the browser as downloads (its exports and screenshots) to the server instead of the Downloads folder.
//   test.html?...&driver=lesson     play the lesson named in ?lesson= to its end
//   test.html?...&driver=script     run /__test/check.script (--script), as the desktop test runs it
//   test.html?...&driver=drop       once the shipped model is in, drop /__test/drop/NAME onto the page as a user
//                                   drags a file from their desktop; then report what the browser keeps of the
//                                   settings (localStorage)
'use strict';
(function () {
  var query = new URLSearchParams(window.location.search);
  var mode = query.get('driver');
  function post(path, body) {
    var xhr = new XMLHttpRequest();
    xhr.open(path.indexOf('/upload/') >= 0 ? 'PUT' : 'POST', path, false);  // in order: synchronous
    xhr.send(body);
  }
  var hooks = {
    report: function (line) { post('/__test/report', line); },
    download: function (name, bytes) { post('/__test/upload/' + encodeURIComponent(name), bytes); },
  };
  window.addEventListener('error', function (e) { post('/__test/report', 'page error: ' + e.message); });
  if (mode === 'script') {
    var xhr = new XMLHttpRequest();
    xhr.open('GET', '/__test/check.script', false);
    xhr.send();
    var script = xhr.responseText;
    hooks.extraArguments = ['--script', '/tmp/check.script'];
    hooks.preRun = function (FS) { FS.mkdirTree('/tmp'); FS.writeFile('/tmp/check.script', script); };
  }
  if (mode === 'lesson') {
    var pressed = 0;
    var report = hooks.report;
    hooks.report = function (line) {
      report(line);
      var pause = /lesson pause (\d+)\//.exec(line);
      if (!pause || Number(pause[1]) <= pressed) return;
      pressed = Number(pause[1]);
      // A moment on each pause, as a class would have, then Space: keydown and keyup as a keyboard sends them.
      setTimeout(function () {
        ['keydown', 'keyup'].forEach(function (type) {
          var e = new KeyboardEvent(type, { key: ' ', code: 'Space', bubbles: true, cancelable: true });
          Object.defineProperty(e, 'keyCode', { get: function () { return 32; } });
          Object.defineProperty(e, 'which', { get: function () { return 32; } });
          window.dispatchEvent(e);
        });
      }, 150);
    };
  }
  if (mode === 'drop') {
    var dropped = false;
    var report2 = hooks.report;
    hooks.report = function (line) {
      report2(line);
      if (!dropped && /^stepformer-page: model .*de-en(-bpe)?\.safetensors;/.test(line)) {
        dropped = true;
        var name = query.get('file');
        fetch('/__test/drop/' + name).then(function (r) { return r.arrayBuffer(); }).then(function (bytes) {
          var transfer = new DataTransfer();
          transfer.items.add(new File([bytes], name));
          var canvas = document.getElementById('canvas');
          ['dragenter', 'dragover', 'drop'].forEach(function (type) {
            canvas.dispatchEvent(new DragEvent(type, { dataTransfer: transfer, bubbles: true, cancelable: true }));
          });
        });
      }
      if (dropped && line.indexOf('stepformer-page: model /') === 0 && line.indexOf(query.get('file')) >= 0) {
        // The settings are written at most once a second (gui/settings.h): look after two.
        setTimeout(function () {
          var kept = null;
          try { kept = window.localStorage.getItem('stepformer.settings'); } catch (e) { kept = 'error: ' + e; }
          post('/__test/report', 'settings kept: ' + JSON.stringify(kept));
        }, 2500);
      }
    };
  }
  window.StepformerHooks = hooks;
})();
