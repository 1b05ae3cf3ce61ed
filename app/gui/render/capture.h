// Reading back what a frame drew: the back buffer (after ImGui rendered, before the swap), whole or a
// rectangle of it, as RGB rows from the top (as PNG stores them).
#pragma once
#include <string>
#include <vector>

namespace sf::gui {

// A rectangle in framebuffer pixels from the top-left; width or height 0: the whole framebuffer.
struct PixelRect {
  int x = 0, y = 0, width = 0, height = 0;
};

// Reads `rect` (clipped to the framebuffer) of the current context's back buffer into `rgb` (3 bytes per
// pixel, top row first) and its size into width/height. Returns "" or the reason it could not.
std::string read_back_buffer(PixelRect rect, std::vector<unsigned char>* rgb, int* width, int* height);

}  // namespace sf::gui
