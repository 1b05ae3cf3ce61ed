// The one way Stepformer reads and writes a user's files, used by every reader and writer in core, CLI and app.
//
// Reading: open without blocking (a FIFO or a device where a file belongs never hangs the caller), insist on a
// regular file, check its size against a limit before allocating anything, then read it whole with read(2)
// (never mmap: a file cut short by another process is a clear error, not a SIGBUS).
//
// Writing: the bytes go to a uniquely named hidden temporary file beside the target (same file system, short
// name, so targets up to the file system's name limit work), which is flushed (fsync) and then renamed onto
// the target, or, when it must not replace anything, hard-linked (link(2) refuses to overwrite, even a file
// that appeared since the check). Readers see the old file or the new one, never half of one; a failure, a
// full disk, SIGINT, SIGTERM or SIGHUP removes the temporary file; one left by a process killed outright
// (SIGKILL) is removed by the next write into that folder once it is an hour old and its process is gone.
// Before anything is written the target is
// checked against WriteRules:
//   - never anything but a regular file (a folder, FIFO, socket or device node is refused, even as root);
//   - never a symbolic link (the file would silently replace the link; name the file it points to instead);
//   - never one of the command's own inputs (the same file by device and inode: also through links, hard links
//     or another name; for an input that is a folder, any file in it);
//   - an existing file only when `replace` is set, and then its permission bits (and owner, as root) are kept;
//   - with `allowed_folder`, only under that folder once every link in the path is resolved (scripts and
//     lessons: shared files that must never write anywhere the user did not choose).
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace sf {

// ---- reading

// "a FIFO", "a folder", "a character device", ... for the message when `path` is not a regular file; "" when it
// is one or does not exist (stat follows links: a link to a regular file is a regular file).
std::string non_regular_file_kind(const std::string& path);

// Opens `path` read-only without blocking, checks that it is a regular file of at most `max_bytes` and returns
// the descriptor (the caller closes it) and its size. Throws sf::Error(File) naming the path and the fault:
//   "[where] 'x' is a FIFO, not a regular file", "[where] 'x' is 6.0 GB; the limit for a model file is 4.0 GB".
// `what` names the file's role in the limit message ("a model file", "a script").
int open_regular_file(const std::string& path, uint64_t max_bytes, const char* what, const char* where,
                      uint64_t* size);
// Reads all of `path` as above. A file that shrinks while it is read is an sf::Error(File) ("changed while it
// was read"), never a short or torn result.
std::string read_user_file(const std::string& path, uint64_t max_bytes, const char* what, const char* where);
// Reads `size` bytes from `fd` into `out` (the whole file as fstat saw it); throws as above when it shrinks.
void read_exactly(int fd, void* out, uint64_t size, const std::string& path, const char* where);

// "512 bytes", "3.4 MB", "1.2 GB": a size for a message.
std::string byte_size_text(uint64_t bytes);

// ---- writing

struct WriteRules {
  bool replace = false;             // may replace an existing regular file (never anything else)
  std::vector<std::string> inputs;  // the command's inputs, files or folders: never written over (by identity)
  std::string allowed_folder;       // "" = anywhere; else the file must lie under this folder, links resolved
};

// Everything write_user_file checks before it writes, so a command can refuse at its start instead of after an
// hour of training. "" when `path` may be written, else one sentence naming the path, the fault and the fix.
std::string check_output_path(const std::string& path, const WriteRules& rules);

// Writes `bytes` to `path` under `rules`, atomically. Returns "" on success, else a sentence for the user naming
// the path and the reason ("'x.png' exists: not replaced", "cannot create a file in '/root': Permission denied").
std::string write_user_file(const std::string& path, std::string_view bytes, const WriteRules& rules);

// The same, written in pieces (a log that grows while the app runs): open() checks the rules and creates the
// temporary file, append() adds bytes, commit() puts the file in place. Until commit() the target is untouched;
// an object destroyed (or a process signalled) before commit() leaves no temporary file and no target.
class UserFileStream {
 public:
  UserFileStream() = default;
  ~UserFileStream();
  UserFileStream(const UserFileStream&) = delete;
  UserFileStream& operator=(const UserFileStream&) = delete;

  std::string open(const std::string& path, const WriteRules& rules);  // "" or the problem
  bool is_open() const { return fd_ >= 0; }
  std::string append(std::string_view bytes);  // "" or the problem (the stream is then abandoned)
  std::string commit();                        // "" or the problem; closes the stream either way

 private:
  void abandon();
  std::string path_, temp_;
  WriteRules rules_;
  int fd_ = -1, slot_ = -1;
  bool replacing_ = false;
  unsigned old_mode_ = 0, old_uid_ = 0, old_gid_ = 0;
};

// Installs handlers for SIGINT, SIGTERM and SIGHUP that remove the temporary files being written at that moment
// and then end the process as the signal would have (the CLI and the app call this once at start).
void remove_temporary_files_on_signal();
// The temporary files being written right now (for tests: empty whenever no write is in progress).
int temporary_files_in_flight();

// ---- for the tests: the two moments of a write that its promises rest on, observed or disturbed
struct WriteTestHooks {
  // Called by commit() once the temporary file is complete and synced, just before it is put in place (link(2),
  // or rename(2) when replacing): a test creates the target there, as another program could, to make the race
  // between the check and the commit happen.
  std::function<void(const std::string& path)> before_commit;
  // Called with "file" and then "folder" as commit() syncs each (the data, then the new name's entry).
  std::function<void(const char* what)> synced;
};
WriteTestHooks& write_test_hooks();
// Across processes (a test signalling the CLI or the app while it writes): with STEPFORMER_TEST_WRITE_PAUSE_MS
// set in the environment, commit() waits that long with the temporary file complete, before putting it in place.

}  // namespace sf
