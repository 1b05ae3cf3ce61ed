# Writes a C++ source that holds every shaders/*.glsl file as a string, looked up by file name.
# Run by app/CMakeLists.txt as: cmake -DOUT=... -DSHADER_DIR=... -P embed_shaders.cmake
file(GLOB shader_files ${SHADER_DIR}/*.glsl)
list(SORT shader_files)
set(body "// Generated from shaders/*.glsl by tools/embed_shaders.cmake. Do not edit.\n#include <cstring>\n\nnamespace sf::gui {\n\nstruct EmbeddedShader { const char* name; const char* source; };\nstatic const EmbeddedShader kShaders[] = {\n")
foreach(f ${shader_files})
  get_filename_component(name ${f} NAME)
  file(READ ${f} src)
  string(APPEND body "  {\"${name}\", R\"glsl_source(${src})glsl_source\"},\n")
endforeach()
string(APPEND body "};\n\nconst char* embedded_shader(const char* name) {\n  for (const auto& s : kShaders)\n    if (std::strcmp(s.name, name) == 0) return s.source;\n  return nullptr;\n}\n\n}  // namespace sf::gui\n")
file(WRITE ${OUT}.tmp "${body}")
file(COPY_FILE ${OUT}.tmp ${OUT} ONLY_IF_DIFFERENT)
