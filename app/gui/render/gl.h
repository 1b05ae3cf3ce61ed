// The one way the app's drawing code reaches OpenGL. On the desktop: OpenGL 3.3 core (Mesa exports every entry
// point, so prototypes are enough: GL_GLEXT_PROTOTYPES, third_party/stepformer_dependencies.cmake). In a web page:
// WebGL2, which is OpenGL ES 3.0; the app uses only what the two share (R32F textures read with texelFetch, vertex
// arrays, glReadPixels), and its shaders are written once, in GLSL 3.30, and given an ES header there
// (gl_program.cpp: shader_source_for_this_gl).
#pragma once
#if defined(__EMSCRIPTEN__)
#include <GLES3/gl3.h>
#else
#include <GL/gl.h>
#include <GL/glext.h>
#endif
