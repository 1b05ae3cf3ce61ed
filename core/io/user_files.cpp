#include "io/user_files.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <cstdlib>
#include <thread>
#include <filesystem>

#include "util/cancel.h"
#include "util/error.h"

namespace sf {

namespace fs = std::filesystem;

namespace {

std::string errno_text() { return std::strerror(errno); }

std::string in_quotes(const std::string& path) { return "'" + path + "'"; }

const char* kind_of_mode(mode_t mode) {
  if (S_ISREG(mode)) return "";
  if (S_ISDIR(mode)) return "a folder";
  if (S_ISFIFO(mode)) return "a FIFO (named pipe)";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISLNK(mode)) return "a symbolic link";
  return "not a regular file";
}

// [SECTION] temporary files removed on a signal
//
// A fixed table, so the handler touches no heap: a slot is claimed (state 0 -> 1), filled, then published
// (1 -> 2); the handler unlinks the published ones (unlink(2) is async-signal-safe).
constexpr int kTempSlots = 32;
struct TempSlot {
  std::atomic<int> state{0};  // 0 free, 1 being filled, 2 live
  char path[4096];
};
TempSlot g_temp_slots[kTempSlots];

int register_temp(const std::string& path) {
  if (path.size() >= sizeof(TempSlot::path)) return -1;
  for (int i = 0; i < kTempSlots; ++i) {
    int expected = 0;
    if (!g_temp_slots[i].state.compare_exchange_strong(expected, 1)) continue;
    std::memcpy(g_temp_slots[i].path, path.c_str(), path.size() + 1);
    g_temp_slots[i].state.store(2);
    return i;
  }
  return -1;  // more than 32 writes at once: this one is still removed on failure, only not on a signal
}

void unregister_temp(int slot) {
  if (slot >= 0) g_temp_slots[slot].state.store(0);
}

void on_fatal_signal(int signal_number) {
  for (TempSlot& slot : g_temp_slots)
    if (slot.state.load() == 2) ::unlink(slot.path);
  // End as the signal would have: the default action, raised again (the shell sees "killed by SIGINT").
  struct sigaction action {};
  action.sa_handler = SIG_DFL;
  sigemptyset(&action.sa_mask);
  sigaction(signal_number, &action, nullptr);
  raise(signal_number);
}

// The hidden temporary file's name: short (so a target name of up to 255 bytes still fits beside it) and unique
// across processes and threads (pid, a counter, and O_EXCL at creation).
std::string temp_path_in(const fs::path& dir) {
  static std::atomic<unsigned> counter{0};
  char name[64];
  std::snprintf(name, sizeof name, ".stepformer-%d-%u.tmp", static_cast<int>(::getpid()), counter++);
  return (dir / name).string();
}

// A process killed outright (SIGKILL, a power cut) cannot remove its temporary file. The next write into the
// same folder does: a name of ours whose process is gone (kill(pid, 0) says ESRCH) and that has not changed for
// an hour. Nothing else is ever touched.
void remove_stale_temporary_files(const fs::path& dir) {
  std::error_code ec;
  const auto now = fs::file_time_type::clock::now();
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    int pid = 0;
    unsigned n = 0;
    int used = 0;
    if (std::sscanf(name.c_str(), ".stepformer-%d-%u.tmp%n", &pid, &n, &used) != 2 ||
        used != static_cast<int>(name.size()) || pid <= 0 || pid == ::getpid())
      continue;
    if (::kill(pid, 0) == 0 || errno != ESRCH) continue;
    std::error_code time_ec;
    const auto changed = fs::last_write_time(it->path(), time_ec);
    if (time_ec || now - changed < std::chrono::hours(1)) continue;
    struct stat st {};
    if (::lstat(it->path().c_str(), &st) == 0 && S_ISREG(st.st_mode)) ::unlink(it->path().c_str());
  }
}

bool same_file(const struct stat& a, const struct stat& b) { return a.st_dev == b.st_dev && a.st_ino == b.st_ino; }

// The file of `input` that `target` is (by device and inode: through links, hard links and other names), or "":
// the input itself, or, where the input is a folder (a Hugging Face model folder), any file in it, two levels
// deep at most and the first 10,000 entries (a model folder holds a dozen).
std::string input_that_is(const std::string& input, const struct stat& target) {
  struct stat in_st {};
  if (input.empty() || ::stat(input.c_str(), &in_st) != 0) return "";
  if (same_file(in_st, target)) return input;
  if (!S_ISDIR(in_st.st_mode)) return "";
  std::error_code ec;
  int seen = 0;
  for (fs::recursive_directory_iterator it(input, ec), end; !ec && it != end && seen < 10000; it.increment(ec), ++seen) {
    if (it.depth() >= 1) it.disable_recursion_pending();
    struct stat st {};
    if (::stat(it->path().c_str(), &st) == 0 && S_ISREG(st.st_mode) && same_file(st, target)) return it->path().string();
  }
  return "";
}

}  // namespace

// [SECTION] reading

std::string non_regular_file_kind(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return "";
  return kind_of_mode(st.st_mode);
}

namespace {
// 1048579 -> "1,048,579".
std::string with_thousands(uint64_t n) {
  std::string digits = std::to_string(n), out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}
}  // namespace

std::string byte_size_text(uint64_t bytes) {
  char text[48];
  if (bytes < 1000) std::snprintf(text, sizeof text, "%llu bytes", static_cast<unsigned long long>(bytes));
  else if (bytes < 1000000) std::snprintf(text, sizeof text, "%.1f kB", bytes / 1e3);
  else if (bytes < 1000000000) std::snprintf(text, sizeof text, "%.1f MB", bytes / 1e6);
  else std::snprintf(text, sizeof text, "%.1f GB", bytes / 1e9);
  return text;
}

int open_regular_file(const std::string& path, uint64_t max_bytes, const char* what, const char* where,
                      uint64_t* size) {
  if (path.empty()) fail(ErrorKind::File, where, std::string("no file name given for ") + what);
  // O_NONBLOCK: opening a FIFO with no writer returns at once instead of waiting for one; O_NOCTTY: a terminal
  // device never becomes the controlling terminal. Regular files ignore both.
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
  if (fd < 0) {
    const std::string why = errno_text();
    fail(ErrorKind::File, ErrorCode::FileCannotOpen, where, {{"path", path}, {"reason", why}},
         "cannot open " + in_quotes(path) + ": " + why);
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const std::string why = errno_text();
    ::close(fd);
    fail(ErrorKind::File, ErrorCode::FileCannotRead, where, {{"path", path}, {"reason", why}},
         "cannot read " + in_quotes(path) + ": " + why);
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    const std::string kind = kind_of_mode(st.st_mode);
    fail(ErrorKind::File, ErrorCode::FileNotRegular, where, {{"path", path}, {"file_kind", kind}},
         in_quotes(path) + " is " + kind + ", not a regular file (" + what + " must be a file)");
  }
  const uint64_t bytes = static_cast<uint64_t>(st.st_size);
  if (bytes > max_bytes) {
    ::close(fd);
    // (just over the limit, the rounded sizes read alike, "1.0 MB; the limit is 1.0 MB": then the bytes)
    const bool alike = byte_size_text(bytes) == byte_size_text(max_bytes);
    const auto size_of = [&](uint64_t n) { return alike ? with_thousands(n) + " bytes" : byte_size_text(n); };
    fail(ErrorKind::File, ErrorCode::FileTooLarge, where,
         {{"path", path}, {"size", size_of(bytes)}, {"limit", size_of(max_bytes)}},
         in_quotes(path) + " is " + size_of(bytes) + "; the limit for " + what + " is " + size_of(max_bytes));
  }
  *size = bytes;
  return fd;
}

void read_exactly(int fd, void* out, uint64_t size, const std::string& path, const char* where) {
  auto* p = static_cast<char*>(out);
  for (uint64_t done = 0; done < size;) {
    stop_if_cancelled();  // (a large model loading while the app quits: util/cancel.h)
    const size_t chunk = static_cast<size_t>(std::min<uint64_t>(size - done, 64u << 20));
    const ssize_t n = ::read(fd, p + done, chunk);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (n < 0) {
      const std::string why = errno_text();
      fail(ErrorKind::File, ErrorCode::FileCannotRead, where, {{"path", path}, {"reason", why}},
           "cannot read " + in_quotes(path) + ": " + why);
    }
    if (n == 0)
      fail(ErrorKind::File, ErrorCode::FileChanged, where, {{"path", path}},
           in_quotes(path) + " changed while it was read: it was " + byte_size_text(size) + ", it ended after " +
               byte_size_text(done) + " (another program is writing it; try again when it has finished)");
    done += static_cast<uint64_t>(n);
  }
}

std::string read_user_file(const std::string& path, uint64_t max_bytes, const char* what, const char* where) {
  uint64_t size = 0;
  const int fd = open_regular_file(path, max_bytes, what, where, &size);
  std::string text;
  try {
    text.resize(static_cast<size_t>(size));
    read_exactly(fd, text.data(), size, path, where);
  } catch (...) {
    ::close(fd);
    throw;
  }
  ::close(fd);
  return text;
}

// [SECTION] writing

std::string check_output_path(const std::string& path, const WriteRules& rules) {
  if (path.empty()) return "no file name given";
  const fs::path target(path);
  if (!target.has_filename()) return in_quotes(path) + " names a folder, not a file";
  const fs::path dir = target.has_parent_path() ? target.parent_path() : fs::path(".");
  // First: a path outside the allowed folder is not even looked at.
  if (!rules.allowed_folder.empty()) {
    std::error_code ec_dir, ec_allowed;
    const fs::path real_dir = fs::canonical(dir, ec_dir);
    const fs::path real_allowed = fs::canonical(rules.allowed_folder, ec_allowed);
    if (ec_allowed) return "the folder allowed for writing, " + in_quotes(rules.allowed_folder) + ", cannot be found";
    bool inside = true;  // a folder that cannot be resolved is named below, as missing
    if (!ec_dir) {
      auto d = real_dir.begin();
      for (auto a = real_allowed.begin(); a != real_allowed.end(); ++a, ++d)
        if (d == real_dir.end() || *d != *a) {
          inside = false;
          break;
        }
    }
    if (!inside)
      return in_quotes(path) + " is outside the folder this may write to (" + real_allowed.string() +
             "); start the app with --allow-write FOLDER to allow another";
  }
  struct stat link_st {};
  const bool exists = ::lstat(path.c_str(), &link_st) == 0;
  if (exists) {
    if (S_ISLNK(link_st.st_mode))
      return in_quotes(path) + " is a symbolic link: not written through it (give the path of the file it points to)";
    if (!S_ISREG(link_st.st_mode))
      return in_quotes(path) + " is " + kind_of_mode(link_st.st_mode) + ", not a regular file: not written";
    for (const std::string& input : rules.inputs)
      if (const std::string same = input_that_is(input, link_st); !same.empty())
        return in_quotes(path) + " is the same file as the input " + in_quotes(same) +
               (same == input ? std::string() : " (in the input folder " + in_quotes(input) + ")") +
               ": not written over (choose another output name)";
    if (!rules.replace) return in_quotes(path) + " exists: not replaced (choose another name or remove it first)";
  }
  struct stat dir_st {};
  if (::stat(dir.c_str(), &dir_st) != 0) return "cannot write " + in_quotes(path) + ": the folder " + in_quotes(dir.string()) + " does not exist";
  if (!S_ISDIR(dir_st.st_mode)) return "cannot write " + in_quotes(path) + ": " + in_quotes(dir.string()) + " is not a folder";
  return "";
}

UserFileStream::~UserFileStream() { abandon(); }

void UserFileStream::abandon() {
  if (fd_ < 0) return;
  ::close(fd_);
  ::unlink(temp_.c_str());
  unregister_temp(slot_);
  fd_ = slot_ = -1;
}

std::string UserFileStream::open(const std::string& path, const WriteRules& rules) {
  abandon();
  if (std::string problem = check_output_path(path, rules); !problem.empty()) return problem;
  path_ = path;
  rules_ = rules;
  const fs::path target(path);
  const fs::path dir = target.has_parent_path() ? target.parent_path() : fs::path(".");
  struct stat old_st {};
  replacing_ = ::lstat(path.c_str(), &old_st) == 0;
  old_mode_ = old_st.st_mode & 07777;
  old_uid_ = old_st.st_uid;
  old_gid_ = old_st.st_gid;
  remove_stale_temporary_files(dir);
  for (int attempt = 0; attempt < 100 && fd_ < 0; ++attempt) {  // another process may hold the same name
    temp_ = temp_path_in(dir);
    fd_ = ::open(temp_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0666);  // umask applies
    if (fd_ < 0 && errno != EEXIST) break;
  }
  if (fd_ < 0) return "cannot create a file in " + in_quotes(dir.string()) + ": " + errno_text();
  slot_ = register_temp(temp_);
  if (replacing_) {  // the replaced file's permission bits, and its owner where we may set it (root)
    if (::fchmod(fd_, old_mode_) != 0) {
      const std::string why = errno_text();
      abandon();
      return "cannot set the permissions of " + in_quotes(path) + ": " + why;
    }
    if (::geteuid() == 0 && ::fchown(fd_, old_uid_, old_gid_) != 0) {
      // not fatal: the file keeps root as its owner
    }
  }
  return "";
}

std::string UserFileStream::append(std::string_view bytes) {
  if (fd_ < 0) return "cannot write " + in_quotes(path_) + ": not open";
  for (size_t done = 0; done < bytes.size();) {
    const ssize_t n = ::write(fd_, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const std::string why = n == 0 ? "no space written" : errno_text();
      abandon();
      return "cannot write " + in_quotes(path_) + ": " + why;
    }
    done += static_cast<size_t>(n);
  }
  return "";
}

WriteTestHooks& write_test_hooks() {
  static WriteTestHooks hooks;
  return hooks;
}

std::string UserFileStream::commit() {
  if (fd_ < 0) return "cannot write " + in_quotes(path_) + ": not open";
  if (::fsync(fd_) != 0 || ::close(fd_) != 0) {
    const std::string why = errno_text();
    fd_ = -1;
    ::unlink(temp_.c_str());
    unregister_temp(slot_);
    return "cannot write " + in_quotes(path_) + ": " + why;
  }
  fd_ = -1;
  if (write_test_hooks().synced) write_test_hooks().synced("file");
  if (const char* pause = std::getenv("STEPFORMER_TEST_WRITE_PAUSE_MS"); pause && *pause)
    std::this_thread::sleep_for(std::chrono::milliseconds(std::strtol(pause, nullptr, 10)));
  if (write_test_hooks().before_commit) write_test_hooks().before_commit(path_);
  const std::string& path = path_;
  const fs::path target(path);
  const fs::path dir = target.has_parent_path() ? target.parent_path() : fs::path(".");
  std::string error;
  if (rules_.replace) {
    // Checked again just before: a folder, device or link may have appeared at the path since open().
    struct stat now {};
    if (::lstat(path.c_str(), &now) == 0 && !S_ISREG(now.st_mode))
      error = in_quotes(path) + " is " + kind_of_mode(now.st_mode) + ", not a regular file: not written";
    else if (::rename(temp_.c_str(), path.c_str()) != 0)
      error = "cannot write " + in_quotes(path) + ": " + errno_text();
  } else if (::link(temp_.c_str(), path.c_str()) != 0) {
    // link(2) never replaces: EEXIST when the file appeared since the check above.
    if (errno == EEXIST) {
      error = in_quotes(path) + " exists: not replaced";
    } else if (errno == EPERM || errno == EOPNOTSUPP || errno == ENOSYS || errno == EXDEV || errno == EMLINK) {
      // A file system without hard links (FAT, some network mounts, a web page's memory: EMLINK): check, then
      // rename.
      struct stat now {};
      if (::lstat(path.c_str(), &now) == 0) error = in_quotes(path) + " exists: not replaced";
      else if (::rename(temp_.c_str(), path.c_str()) != 0) error = "cannot write " + in_quotes(path) + ": " + errno_text();
    } else {
      error = "cannot write " + in_quotes(path) + ": " + errno_text();
    }
  }
  ::unlink(temp_.c_str());  // after link (or a failed rename): the temporary name goes; after rename: ENOENT
  unregister_temp(slot_);
  slot_ = -1;
  if (error.empty()) {  // the new name itself is durable once the folder's entry is on disk
    const int dir_fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dir_fd >= 0) {
      ::fsync(dir_fd);
      ::close(dir_fd);
      if (write_test_hooks().synced) write_test_hooks().synced("folder");
    }
  }
  return error;
}

std::string write_user_file(const std::string& path, std::string_view bytes, const WriteRules& rules) {
  UserFileStream file;
  std::string error = file.open(path, rules);
  if (error.empty()) error = file.append(bytes);
  if (error.empty()) error = file.commit();
  return error;
}

void remove_temporary_files_on_signal() {
  struct sigaction action {};
  action.sa_handler = on_fatal_signal;
  sigemptyset(&action.sa_mask);
  for (int s : {SIGINT, SIGTERM, SIGHUP}) sigaction(s, &action, nullptr);
}

int temporary_files_in_flight() {
  int n = 0;
  for (const TempSlot& slot : g_temp_slots) n += slot.state.load() == 2;
  return n;
}

}  // namespace sf
