#include "io/atomic_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>

namespace sf {

namespace fs = std::filesystem;

std::string write_file_atomically(const std::string& path, std::string_view bytes, bool replace) {
  if (path.empty()) return "no file name given";
  const fs::path target(path);
  std::error_code ec;
  if (fs::is_directory(target, ec)) return "'" + path + "' is a folder, not a file name";
  if (!replace && fs::exists(fs::symlink_status(target, ec))) return "'" + path + "' exists: not replaced";
  const fs::path dir = target.has_parent_path() ? target.parent_path() : fs::path(".");
  static std::atomic<int> counter{0};
  // A hidden name beside the target (same file system, so link and rename stay atomic).
  std::string temp_name = ".";
  temp_name += target.filename().string();
  temp_name += ".tmp-" + std::to_string(::getpid()) + "-" + std::to_string(counter++);
  const fs::path temp = dir / temp_name;
  const int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) return "cannot create a file in '" + dir.string() + "': " + std::strerror(errno);
  auto fail = [&](const std::string& what) {
    const std::string reason = std::strerror(errno);
    ::close(fd);
    ::unlink(temp.c_str());
    return what + ": " + reason;
  };
  for (size_t done = 0; done < bytes.size();) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return fail("cannot write '" + path + "'");
    done += static_cast<size_t>(n);
  }
  if (::fsync(fd) != 0) return fail("cannot write '" + path + "'");
  if (::close(fd) != 0) {
    const std::string reason = std::strerror(errno);
    ::unlink(temp.c_str());
    return "cannot write '" + path + "': " + reason;
  }
  std::string error;
  if (replace) {
    if (::rename(temp.c_str(), path.c_str()) != 0) error = "cannot write '" + path + "': " + std::strerror(errno);
  } else if (::link(temp.c_str(), path.c_str()) != 0) {
    // link(2) never replaces: EEXIST when the file appeared since the check above.
    if (errno == EEXIST) error = "'" + path + "' exists: not replaced";
    else if (errno == EPERM || errno == EOPNOTSUPP || errno == ENOSYS || errno == EXDEV) {
      // A file system without hard links (FAT, some network mounts): check, then rename.
      if (fs::exists(fs::symlink_status(target, ec))) error = "'" + path + "' exists: not replaced";
      else if (::rename(temp.c_str(), path.c_str()) != 0)
        error = "cannot write '" + path + "': " + std::strerror(errno);
    } else {
      error = "cannot write '" + path + "': " + std::strerror(errno);
    }
  }
  ::unlink(temp.c_str());  // after link (or a failed rename): the temporary name goes; after rename: ENOENT
  if (error.empty()) {  // the new name itself is durable once the folder's entry is on disk
    const int dir_fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dir_fd >= 0) {
      ::fsync(dir_fd);
      ::close(dir_fd);
    }
  }
  return error;
}

}  // namespace sf
