// Writing a file so that readers see the old file or the new one, never a half-written one, and a crash or a
// full disk leaves the old one as it was: the bytes go to a hidden temporary file beside the target (same file
// system), which is flushed (fsync) and then renamed onto the target, or, when it must not replace anything,
// hard-linked (link(2) refuses to overwrite, even a file that appeared since the check); the folder entry is
// flushed too. A failure removes the temporary file. Used for model files (io/safetensors.h), the app's exports
// and its settings.
#pragma once
#include <string>
#include <string_view>

namespace sf {

// Writes `bytes` to `path` atomically. Returns "" on success, else a sentence for the user naming the path and
// the reason ("'x.png' exists: not replaced", "cannot create a file in '/root': Permission denied").
std::string write_file_atomically(const std::string& path, std::string_view bytes, bool replace);

}  // namespace sf
