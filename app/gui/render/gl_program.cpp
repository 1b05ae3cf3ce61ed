#include "gui/render/gl_program.h"

#include <GL/gl.h>
#include <GL/glext.h>

#include <stdexcept>

namespace sf::gui {

namespace {

GLuint compile(GLenum kind, const char* file_name) {
  const char* source = embedded_shader(file_name);
  if (!source) throw std::runtime_error(std::string("[build_gl_program] shader '") + file_name + "' is not embedded");
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
