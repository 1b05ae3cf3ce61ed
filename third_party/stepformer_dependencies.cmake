# CMake glue for the Debian packages Stepformer builds on. No third-party source lives in this repository:
# everything here is found on the system (see tools/stepformer for the package list).
#
# Defines:
#   Eigen3::Eigen, nlohmann_json::nlohmann_json, Threads::Threads,
#   stepformer::sentencepiece (libsentencepiece: Marian's subword tokenizer, model/sentencepiece.h)     (core)
#   stepformer::gui_deps  GLFW + OpenGL + Dear ImGui 1.86 (with its GLFW/OpenGL3 backends) + stb   (app only)
#   STEPFORMER_HAVE_CUDA  TRUE when the CUDA backend is built

find_package(Eigen3 3.3 REQUIRED NO_MODULE)
if(EMSCRIPTEN)
  # nlohmann-json's CMake package names /usr/include as its include folder, which would put the system's C
  # library headers before emscripten's: the web build sees only its folder, through a link in the build tree.
  find_path(NLOHMANN_JSON_INCLUDE_ROOT nlohmann/json.hpp PATHS /usr/include NO_CMAKE_FIND_ROOT_PATH REQUIRED)
  file(MAKE_DIRECTORY ${CMAKE_BINARY_DIR}/web_include)
  file(CREATE_LINK ${NLOHMANN_JSON_INCLUDE_ROOT}/nlohmann ${CMAKE_BINARY_DIR}/web_include/nlohmann SYMBOLIC)
  add_library(nlohmann_json::nlohmann_json INTERFACE IMPORTED)
  target_include_directories(nlohmann_json::nlohmann_json SYSTEM INTERFACE ${CMAKE_BINARY_DIR}/web_include)
else()
  find_package(nlohmann_json 3.2 REQUIRED)
endif()
add_library(stepformer_sentencepiece INTERFACE)
add_library(stepformer::sentencepiece ALIAS stepformer_sentencepiece)
if(EMSCRIPTEN)
  # The web build (emcmake): a page without special server headers has no SharedArrayBuffer, so no threads (the
  # pool of util/parallel.h runs everything on the calling thread), and Debian has no WebAssembly SentencePiece
  # (a Marian model says so when it is opened: model/sentencepiece.h).
  add_library(Threads::Threads INTERFACE IMPORTED)
  target_compile_definitions(stepformer_sentencepiece INTERFACE STEPFORMER_HAVE_SENTENCEPIECE=0
                                                          STEPFORMER_HAVE_SENTENCEPIECE_TRAINER=0)
  # emscripten compiles C++ exceptions out by default (a throw aborts); the core reports every problem as a typed
  # exception (util/error.h), caught at one boundary, so they stay in.
  add_compile_options(-fexceptions)
  add_link_options(-fexceptions)
  # WebAssembly's 128-bit SIMD (Chrome 91, Firefox 89, Safari 16.4 and later; app/web/index.html says so to an
  # older browser): the few-row products' 4-lane kernels (nn/isa/small_gemm_kernels.cpp), and LLVM vectorises
  # other loops with it. Figures: docs/web.md, Speed.
  option(STEPFORMER_WEB_SIMD "Build the web page with WebAssembly SIMD (-msimd128)" ON)
  if(STEPFORMER_WEB_SIMD)
    add_compile_options(-msimd128)
  endif()
else()
  find_package(Threads REQUIRED)
  # SentencePiece by path, not pkg-config: on the GPU machine it comes from an unpacked .deb whose .pc file names
  # /usr (tools/gpu_check.sh points CMAKE_PREFIX_PATH there).
  find_path(SENTENCEPIECE_INCLUDE_DIR sentencepiece_processor.h)
  find_library(SENTENCEPIECE_LIBRARY sentencepiece)
  if(NOT SENTENCEPIECE_INCLUDE_DIR OR NOT SENTENCEPIECE_LIBRARY)
    message(FATAL_ERROR "SentencePiece not found: install Debian's libsentencepiece-dev")
  endif()
  target_include_directories(stepformer_sentencepiece SYSTEM INTERFACE ${SENTENCEPIECE_INCLUDE_DIR})
  target_link_libraries(stepformer_sentencepiece INTERFACE ${SENTENCEPIECE_LIBRARY})
  target_compile_definitions(stepformer_sentencepiece INTERFACE STEPFORMER_HAVE_SENTENCEPIECE=1)
  # Its trainer (libsentencepiece_train, in the same Debian packages): learning a subword vocabulary
  # (train/subwords.h). Optional: a build without it says so when asked to learn one.
  find_library(SENTENCEPIECE_TRAIN_LIBRARY sentencepiece_train)
  if(SENTENCEPIECE_TRAIN_LIBRARY AND EXISTS ${SENTENCEPIECE_INCLUDE_DIR}/sentencepiece_trainer.h)
    target_link_libraries(stepformer_sentencepiece INTERFACE ${SENTENCEPIECE_TRAIN_LIBRARY})
    target_compile_definitions(stepformer_sentencepiece INTERFACE STEPFORMER_HAVE_SENTENCEPIECE_TRAINER=1)
  else()
    target_compile_definitions(stepformer_sentencepiece INTERFACE STEPFORMER_HAVE_SENTENCEPIECE_TRAINER=0)
  endif()
endif()

if(STEPFORMER_BUILD_APP AND EMSCRIPTEN)
  # The app in a web page: GLFW is emscripten's own (-sUSE_GLFW=3, on an HTML canvas), OpenGL is WebGL2 (OpenGL
  # ES 3.0: the shaders get "#version 300 es", render/gl_program.cpp), Dear ImGui is built from Debian's source
  # package (debian_imgui.cmake), and stb's headers are Debian's libstb-dev, seen through a folder of their own as
  # nlohmann-json's are. The page around it and the browser's side: app/web/.
  include(debian_imgui)
  find_path(STB_INCLUDE_ROOT stb/stb_image_write.h PATHS /usr/include NO_CMAKE_FIND_ROOT_PATH REQUIRED)
  file(CREATE_LINK ${STB_INCLUDE_ROOT}/stb ${CMAKE_BINARY_DIR}/web_include/stb SYMBOLIC)
  add_library(stepformer_gui_deps INTERFACE)
  target_link_libraries(stepformer_gui_deps INTERFACE stepformer_imgui)
  target_include_directories(stepformer_gui_deps SYSTEM INTERFACE ${CMAKE_BINARY_DIR}/web_include)
  target_compile_definitions(stepformer_gui_deps INTERFACE GLFW_INCLUDE_NONE)
  target_link_options(stepformer_gui_deps INTERFACE -sUSE_GLFW=3 -sMIN_WEBGL_VERSION=2 -sMAX_WEBGL_VERSION=2)
  target_include_directories(stepformer_imgui SYSTEM PRIVATE ${CMAKE_BINARY_DIR}/web_include)
  add_library(stepformer::gui_deps ALIAS stepformer_gui_deps)
elseif(STEPFORMER_BUILD_APP)   # only the app needs pkg-config, stb and the GUI libraries
  find_package(PkgConfig REQUIRED)
  pkg_check_modules(STB REQUIRED IMPORTED_TARGET stb)   # stb_image_write (the implementation is inside libstb)
  set(OpenGL_GL_PREFERENCE GLVND)
  find_package(OpenGL REQUIRED)
  find_package(glfw3 3.3 REQUIRED)
  # Debian's libimgui.a already holds the GLFW and OpenGL3 backends and imgui_stdlib; imgui.pc does not add
  # the backends' include directory, so we add it here.
  pkg_check_modules(IMGUI REQUIRED IMPORTED_TARGET imgui)
  if(NOT IMGUI_VERSION VERSION_EQUAL 1.86)
    message(WARNING "Stepformer is written against Dear ImGui 1.86; found ${IMGUI_VERSION}")
  endif()
  find_path(IMGUI_BACKENDS_DIR imgui_impl_glfw.h PATHS /usr/include/imgui/backends ${IMGUI_INCLUDE_DIRS}
            PATH_SUFFIXES backends REQUIRED)
  add_library(stepformer_gui_deps INTERFACE)
  target_link_libraries(stepformer_gui_deps INTERFACE PkgConfig::IMGUI PkgConfig::STB glfw OpenGL::GL
                        ${CMAKE_DL_LIBS})
  target_include_directories(stepformer_gui_deps INTERFACE ${IMGUI_BACKENDS_DIR})
  # Mesa exports every GL 3.3 entry point: prototypes are enough, no loader library.
  target_compile_definitions(stepformer_gui_deps INTERFACE GL_GLEXT_PROTOTYPES GLFW_INCLUDE_NONE)
  add_library(stepformer::gui_deps ALIAS stepformer_gui_deps)
endif()

# CUDA: AUTO builds the CUDA backend only when nvcc is found; ON without nvcc is a configure error; OFF never
# looks. The CPU build never needs CUDA.
set(STEPFORMER_HAVE_CUDA FALSE)
string(TOUPPER "${STEPFORMER_CUDA}" _sf_cuda)
if(NOT _sf_cuda MATCHES "^(AUTO|ON|OFF)$")
  message(FATAL_ERROR "STEPFORMER_CUDA must be AUTO, ON or OFF (got '${STEPFORMER_CUDA}')")
endif()
if(NOT _sf_cuda STREQUAL "OFF")
  if(NOT CMAKE_CUDA_COMPILER AND EXISTS /usr/local/cuda/bin/nvcc)
    set(CMAKE_CUDA_COMPILER /usr/local/cuda/bin/nvcc)
  endif()
  include(CheckLanguage)
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
      # Turing (sm_75) to Hopper (sm_90) as machine code, and PTX of sm_90 for newer GPUs to compile at load time.
      # CUDA 13 supports sm_75 and newer; 'native' fails where there is no GPU.
      set(CMAKE_CUDA_ARCHITECTURES 75-real 80-real 86-real 89-real 90-real 90-virtual)
    endif()
    set(CMAKE_CUDA_STANDARD 17)
    set(CMAKE_CUDA_STANDARD_REQUIRED ON)
    enable_language(CUDA)
    find_package(CUDAToolkit REQUIRED)
    set(STEPFORMER_HAVE_CUDA TRUE)
    message(STATUS "Stepformer: CUDA backend ON (${CMAKE_CUDA_COMPILER})")
  elseif(_sf_cuda STREQUAL "ON")
    message(FATAL_ERROR "STEPFORMER_CUDA=ON but no CUDA compiler (nvcc) was found. Install the CUDA Toolkit, "
                        "pass -DCMAKE_CUDA_COMPILER=/path/to/nvcc, or configure with -DSTEPFORMER_CUDA=OFF.")
  else()
    message(STATUS "Stepformer: CUDA backend OFF (no nvcc found; the CPU backend is always built)")
  endif()
endif()

# -Wno-maybe-uninitialized: GCC 12 reports false positives inside Eigen's AVX-512 kernels.
function(stepformer_warnings target)
  target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wno-unused-parameter>
                         $<$<AND:$<COMPILE_LANGUAGE:CXX>,$<CXX_COMPILER_ID:GNU>>:-Wno-maybe-uninitialized>)
endfunction()

if(STEPFORMER_NATIVE)
  include(CheckCXXCompilerFlag)
  check_cxx_compiler_flag(-march=native STEPFORMER_HAS_MARCH_NATIVE)
endif()
