// A linked GLSL program built from the shaders embedded from shaders/ (see tools/embed_shaders.cmake).
#pragma once
#include <string>

namespace sf::gui {

const char* embedded_shader(const char* file_name);  // nullptr when no such file was embedded

// A shader as this build's OpenGL takes it: on the desktop as written ("#version 330 core"); in a web page
// (WebGL2 = OpenGL ES 3.0) the version line becomes "#version 300 es" with highp precision for floats, ints and
// samplers (shader_source_for_es, tested on the desktop too: tests/gui/test_web_shaders.cpp).
std::string shader_source_for_es(const std::string& source);
std::string shader_source_for_this_gl(const std::string& source);

// Compiles and links; on failure throws std::runtime_error with the GLSL info log and the file names.
unsigned int build_gl_program(const char* vertex_file, const char* fragment_file);

}  // namespace sf::gui
