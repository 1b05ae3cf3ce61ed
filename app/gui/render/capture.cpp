#include "gui/render/capture.h"

#include "gui/render/gl.h"
#include <GLFW/glfw3.h>

#include <algorithm>

#include "gui/text/text.h"

namespace sf::gui {

std::string read_back_buffer(PixelRect rect, std::vector<unsigned char>* rgb, int* width, int* height) {
  GLFWwindow* window = glfwGetCurrentContext();
  if (!window) return tr(T::app_export_no_context);
  int fb_w = 0, fb_h = 0;
  glfwGetFramebufferSize(window, &fb_w, &fb_h);
  if (rect.width <= 0 || rect.height <= 0) rect = {0, 0, fb_w, fb_h};
  const int x0 = std::clamp(rect.x, 0, fb_w), y0 = std::clamp(rect.y, 0, fb_h);
  const int x1 = std::clamp(rect.x + rect.width, 0, fb_w), y1 = std::clamp(rect.y + rect.height, 0, fb_h);
  const int w = x1 - x0, h = y1 - y0;
  if (w <= 0 || h <= 0) return tr(T::app_export_no_area);
  // RGBA, the one format OpenGL ES 3.0 (WebGL2) guarantees for reading the window; the alpha is dropped below.
  std::vector<unsigned char> pixels(static_cast<size_t>(w) * h * 4);
  glReadBuffer(GL_BACK);
  glPixelStorei(GL_PACK_ALIGNMENT, 1);
  // OpenGL counts rows from the bottom; PNG (and our rect) from the top.
  glReadPixels(x0, fb_h - y1, w, h, GL_RGBA, GL_UNSIGNED_BYTE, pixels.data());
  rgb->resize(static_cast<size_t>(w) * h * 3);
  for (int y = 0; y < h; ++y) {
    const unsigned char* from = &pixels[static_cast<size_t>(h - 1 - y) * w * 4];
    unsigned char* to = &(*rgb)[static_cast<size_t>(y) * w * 3];
    for (int x = 0; x < w; ++x) std::copy_n(from + 4 * x, 3, to + 3 * x);
  }
  *width = w;
  *height = h;
  return "";
}

}  // namespace sf::gui
