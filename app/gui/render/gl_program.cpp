#include "gui/render/gl_program.h"

#include "gui/render/gl.h"

#include <stdexcept>
#include <string>

namespace sf::gui {

namespace {

GLuint compile(GLenum kind, const char* file_name) {
  const char* embedded = embedded_shader(file_name);
  if (!embedded) throw std::runtime_error(std::string("[build_gl_program] shader '") + file_name + "' is not embedded");
  const std::string text = shader_source_for_this_gl(embedded);
  const char* source = text.c_str();
  GLuint shader = glCreateShader(kind);
  glShaderSource(shader, 1, &source, nullptr);
  glCompileShader(shader);
  GLint ok = 0;
  glGetShaderiv(shader, GL_COMPILE_STATUS, &ok);
  if (!ok) {
    char log[2048] = {};
    glGetShaderInfoLog(shader, sizeof(log), nullptr, log);
    glDeleteShader(shader);
    throw std::runtime_error(std::string("[build_gl_program] ") + file_name + " does not compile: " + log);
  }
  return shader;
}

}  // namespace

std::string shader_source_for_es(const std::string& source) {
  // GLSL ES 3.00 has what the shaders use (texelFetch, textureSize, isnan, gl_VertexID, in/out) but no default
  // precision for floats in a fragment shader, and lowp samplers and ints by default on some GPUs: highp for all.
  static const std::string desktop = "#version 330 core";
  if (source.rfind(desktop, 0) != 0) return source;  // not one of ours: left as it is
  return "#version 300 es\nprecision highp float;\nprecision highp int;\nprecision highp sampler2D;" +
         source.substr(desktop.size());
}

std::string shader_source_for_this_gl(const std::string& source) {
#if defined(__EMSCRIPTEN__)
  return shader_source_for_es(source);
#else
  return source;
#endif
}

unsigned int build_gl_program(const char* vertex_file, const char* fragment_file) {
  GLuint vs = compile(GL_VERTEX_SHADER, vertex_file);
  GLuint fs = compile(GL_FRAGMENT_SHADER, fragment_file);
  GLuint program = glCreateProgram();
  glAttachShader(program, vs);
  glAttachShader(program, fs);
  glLinkProgram(program);
  glDeleteShader(vs);
  glDeleteShader(fs);
  GLint ok = 0;
  glGetProgramiv(program, GL_LINK_STATUS, &ok);
  if (!ok) {
    char log[2048] = {};
    glGetProgramInfoLog(program, sizeof(log), nullptr, log);
    glDeleteProgram(program);
    throw std::runtime_error(std::string("[build_gl_program] ") + vertex_file + " + " + fragment_file +
                             " do not link: " + log);
  }
  return program;
}

}  // namespace sf::gui
