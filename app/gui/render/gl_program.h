// A linked GLSL program built from the shaders embedded from shaders/ (see tools/embed_shaders.cmake).
#pragma once
#include <string>

namespace sf::gui {

const char* embedded_shader(const char* file_name);  // nullptr when no such file was embedded

// Compiles and links; on failure throws std::runtime_error with the GLSL info log and the file names.
unsigned int build_gl_program(const char* vertex_file, const char* fragment_file);

}  // namespace sf::gui
