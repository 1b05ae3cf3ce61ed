# Dear ImGui for the web build, from Debian's own source package of the version the desktop build links
# (libimgui-dev 1.86+ds-1, Debian 12). Nothing is copied into this repository: at configure time the package's
# .dsc and upstream tarball are downloaded from Debian's archive into STEPFORMER_DOWNLOAD_DIR (default
# <build>/downloads; kept, so a rebuild downloads nothing), checked, and unpacked into the build folder.
#
# The chain of trust: the .dsc's SHA-256 is pinned here (the .dsc is signed by its Debian uploader and its hash is
# listed in the archive's signed Sources index; pinning it means a changed .dsc stops the build rather than
# building something else); the tarball's SHA-256 is read from the .dsc's Checksums-Sha256 and must match.
#
# The library is compiled as Debian's packaging compiles libimgui.a (debian/patches/0001-add-Makefile.patch):
# the core, misc/cpp/imgui_stdlib and the GLFW and OpenGL3 backends, with stb_truetype and stb_rect_pack taken
# from Debian's libstb-dev headers rather than ImGui's bundled copies (their implementations: app/web/stb.cpp).
#
# Defines: stepformer_imgui (static library), STEPFORMER_IMGUI_SOURCE_DIR.

set(STEPFORMER_IMGUI_DSC_SHA256 a8023a69501688316566ecd615fe98ecc53b11d305205a6636593f7066bdb7c3)
set(_imgui_pool http://deb.debian.org/debian/pool/main/i/imgui)
set(_imgui_dsc imgui_1.86+ds-1.dsc)
set(_imgui_orig imgui_1.86+ds.orig.tar.xz)
set(STEPFORMER_DOWNLOAD_DIR ${CMAKE_BINARY_DIR}/downloads CACHE PATH "Where the web build keeps Debian's source packages")

# Downloads URL to FILE unless FILE is already there with the expected hash; a wrong or partial file is
# replaced, and a failed download stops the configure with the reason.
function(_stepformer_fetch url file sha256)
  if(EXISTS ${file})
    file(SHA256 ${file} have)
    if(have STREQUAL sha256)
      return()
    endif()
    file(REMOVE ${file})
  endif()
  message(STATUS "Downloading ${url}")
  file(DOWNLOAD ${url} ${file}.part STATUS status TLS_VERIFY ON)
  list(GET status 0 code)
  if(NOT code EQUAL 0)
    list(GET status 1 why)
    file(REMOVE ${file}.part)
    message(FATAL_ERROR "Cannot download ${url}: ${why}. The web build takes Dear ImGui's source from Debian's "
                        "archive; on a machine without it, put ${_imgui_dsc} and ${_imgui_orig} (from a Debian "
                        "mirror) into ${STEPFORMER_DOWNLOAD_DIR}.")
  endif()
  file(SHA256 ${file}.part have)
  if(NOT have STREQUAL sha256)
    file(REMOVE ${file}.part)
    message(FATAL_ERROR "${url}: SHA-256 ${have}, expected ${sha256}: not the file Debian published; nothing built.")
  endif()
  file(RENAME ${file}.part ${file})
endfunction()

file(MAKE_DIRECTORY ${STEPFORMER_DOWNLOAD_DIR})
_stepformer_fetch(${_imgui_pool}/${_imgui_dsc} ${STEPFORMER_DOWNLOAD_DIR}/${_imgui_dsc} ${STEPFORMER_IMGUI_DSC_SHA256})
# The tarball's hash, from the .dsc's Checksums-Sha256 field: " <sha256> <size> <name>".
file(STRINGS ${STEPFORMER_DOWNLOAD_DIR}/${_imgui_dsc} _dsc_lines)
set(_orig_sha256 "")
foreach(line IN LISTS _dsc_lines)
  # (the name compared as a string: its "+" would be a regular expression's operator)
  if(line MATCHES "^ ([0-9a-f]+) [0-9]+ (.+)$" AND CMAKE_MATCH_2 STREQUAL _imgui_orig)
    string(LENGTH "${CMAKE_MATCH_1}" _len)
    if(_len EQUAL 64)  # the Checksums-Sha256 line, not Checksums-Sha1's (40) or Files' MD5 (32)
      set(_orig_sha256 ${CMAKE_MATCH_1})
    endif()
  endif()
endforeach()
if(NOT _orig_sha256)
  message(FATAL_ERROR "${_imgui_dsc} names no SHA-256 for ${_imgui_orig}")
endif()
_stepformer_fetch(${_imgui_pool}/${_imgui_orig} ${STEPFORMER_DOWNLOAD_DIR}/${_imgui_orig} ${_orig_sha256})

set(STEPFORMER_IMGUI_SOURCE_DIR ${CMAKE_BINARY_DIR}/imgui-1.86)
if(NOT EXISTS ${STEPFORMER_IMGUI_SOURCE_DIR}/imgui.h)
  file(ARCHIVE_EXTRACT INPUT ${STEPFORMER_DOWNLOAD_DIR}/${_imgui_orig} DESTINATION ${CMAKE_BINARY_DIR})
endif()

set(_src ${STEPFORMER_IMGUI_SOURCE_DIR})
add_library(stepformer_imgui STATIC ${_src}/imgui.cpp ${_src}/imgui_draw.cpp ${_src}/imgui_tables.cpp
            ${_src}/imgui_widgets.cpp ${_src}/imgui_demo.cpp ${_src}/misc/cpp/imgui_stdlib.cpp
            ${_src}/backends/imgui_impl_glfw.cpp ${_src}/backends/imgui_impl_opengl3.cpp)
# Debian's headers are found as <imgui.h>, <imgui_stdlib.h>, <imgui_impl_glfw.h> (/usr/include/imgui and its
# backends folder); the same names here.
target_include_directories(stepformer_imgui SYSTEM PUBLIC ${_src} ${_src}/backends ${_src}/misc/cpp)
target_compile_definitions(stepformer_imgui
  PUBLIC IMGUI_IMPL_OPENGL_ES3   # WebGL2 is OpenGL ES 3.0 ("#version 300 es"); ImGui 1.86 assumes ES2 on emscripten
  PRIVATE IMGUI_DISABLE_STB_RECT_PACK_IMPLEMENTATION "IMGUI_STB_RECT_PACK_FILENAME=<stb/stb_rect_pack.h>"
          IMGUI_DISABLE_STB_TRUETYPE_IMPLEMENTATION "IMGUI_STB_TRUETYPE_FILENAME=<stb/stb_truetype.h>")
target_compile_options(stepformer_imgui PRIVATE -w)  # not our code: its warnings are upstream's
