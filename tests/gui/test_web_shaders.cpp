// The shaders in a web page (app/gui/render/gl_program.cpp): WebGL2 compiles GLSL ES 3.00, so each shader written
// for the desktop ("#version 330 core") is given the ES version line and highp precision there, and nothing else
// changes. The ES sources are compiled for real by WebGL2 in headless Chromium (tests/web/run_web_app.py); here,
// what the page is given.
#include <gtest/gtest.h>

#include <string>

#include "gui/render/gl_program.h"

namespace sf::gui {
namespace {

TEST(WebShaders, EveryShaderGetsTheEsHeaderAndKeepsItsBody) {
  for (const char* name : {"heatmap.vert.glsl", "heatmap.frag.glsl"}) {
    const char* desktop = embedded_shader(name);
    ASSERT_NE(desktop, nullptr) << name;
    const std::string source(desktop);
    ASSERT_EQ(source.rfind("#version 330 core\n", 0), 0u) << name << " no longer starts with its version line";
    const std::string es = shader_source_for_es(source);
    EXPECT_EQ(es.rfind("#version 300 es\nprecision highp float;\nprecision highp int;\nprecision highp sampler2D;\n", 0),
              0u)
        << es.substr(0, 120);
    // The body after the version line, unchanged: the same code draws on the desktop and in the page.
    EXPECT_EQ(es.substr(es.find("sampler2D;") + 10), source.substr(std::string("#version 330 core").size())) << name;
    // One version line only (a second would not compile).
    EXPECT_EQ(es.find("#version", 1), std::string::npos) << name;
  }
}

TEST(WebShaders, ASourceWithoutTheDesktopVersionIsLeftAlone) {
  EXPECT_EQ(shader_source_for_es("#version 300 es\nvoid main() {}\n"), "#version 300 es\nvoid main() {}\n");
  EXPECT_EQ(shader_source_for_es(""), "");
}

TEST(WebShaders, TheDesktopBuildDrawsWithTheSourceAsWritten) {
  const std::string source = embedded_shader("heatmap.frag.glsl");
  EXPECT_EQ(shader_source_for_this_gl(source), source);
}

}  // namespace
}  // namespace sf::gui
