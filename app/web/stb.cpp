// The web build's stb: the desktop app links Debian's libstb (which holds these implementations); the page
// compiles them once here from the same Debian headers (libstb-dev), for Dear ImGui (truetype, rect_pack: as
// Debian's libimgui uses them, third_party/debian_imgui.cmake) and the app (image_write, truetype).
#define STB_RECT_PACK_IMPLEMENTATION
#define STB_TRUETYPE_IMPLEMENTATION
#define STB_IMAGE_WRITE_IMPLEMENTATION
#include <stb/stb_rect_pack.h>
#include <stb/stb_truetype.h>
#include <stb/stb_image_write.h>
