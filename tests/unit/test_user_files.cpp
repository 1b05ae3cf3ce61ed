// io/user_files.h, the one way a user's file is read or written, and the limits of the core's readers: a test
// per way a careless or hostile user lost a file, hung or crashed the tools (issue #15), each with files made
// here. Also util/printable.h (control characters from files escaped when printed).
#include <gtest/gtest.h>

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <future>
#include <string>

#include "decode/decoder.h"
#include "forward_fixture.h"
#include "io/safetensors.h"
#include "io/user_files.h"
#include "model/model.h"
#include "model/name_tables.h"
#include "model/tokenizer.h"
#include "train/corpus.h"
#include "util/error.h"
#include "util/printable.h"

namespace sf {
namespace {

namespace fs = std::filesystem;

struct Dir {
  fs::path path;
  explicit Dir(const std::string& name) {
    path = fs::temp_directory_path() / ("stepformer_user_files_" + name + "_" + std::to_string(::getpid()));
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~Dir() { fs::remove_all(path); }
  std::string file(const std::string& name) const { return (path / name).string(); }
  // Every name in the folder (hidden temporary files included), sorted.
  std::vector<std::string> names() const {
    std::vector<std::string> out;
    for (const auto& e : fs::directory_iterator(path)) out.push_back(e.path().filename().string());
    std::sort(out.begin(), out.end());
    return out;
  }
};

void write_text(const std::string& path, const std::string& text) { std::ofstream(path, std::ios::binary) << text; }
std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}
bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }
const WriteRules kReplace{true, {}, {}};

// [SECTION] writing

TEST(UserFiles, NeverWritesOverAnInputEvenThroughALinkOrAHardLink) {
  Dir d("inputs");
  const std::string model = d.file("m.safetensors");
  write_text(model, "the model");
  fs::create_symlink(model, d.file("link.safetensors"));
  ASSERT_EQ(::link(model.c_str(), d.file("hard.safetensors").c_str()), 0);
  const WriteRules rules{true, {model}, {}};
  for (const char* out : {"m.safetensors", "hard.safetensors"}) {
    const std::string error = write_user_file(d.file(out), "trace", rules);
    EXPECT_TRUE(contains(error, "is the same file as the input")) << out << ": " << error;
  }
  // The input named through a link is the same file too.
  const WriteRules via_link{true, {d.file("link.safetensors")}, {}};
  EXPECT_TRUE(contains(write_user_file(model, "trace", via_link), "is the same file as the input"));
  EXPECT_EQ(slurp(model), "the model");
  EXPECT_EQ(d.names(), (std::vector<std::string>{"hard.safetensors", "link.safetensors", "m.safetensors"}));
}

TEST(UserFiles, NeverWritesOntoAFifoAFolderADeviceOrThroughASymlink) {
  Dir d("kinds");
  ASSERT_EQ(::mkfifo(d.file("fifo").c_str(), 0644), 0);
  fs::create_directory(d.path / "folder");
  write_text(d.file("target"), "kept");
  fs::create_symlink(d.file("target"), d.file("link"));
  EXPECT_TRUE(contains(write_user_file(d.file("fifo"), "x", kReplace), "is a FIFO (named pipe), not a regular file"));
  EXPECT_TRUE(contains(write_user_file(d.file("folder"), "x", kReplace), "is a folder, not a regular file"));
  EXPECT_TRUE(contains(write_user_file(d.file("link"), "x", kReplace), "is a symbolic link"));
  EXPECT_TRUE(fs::is_fifo(fs::symlink_status(d.file("fifo"))));
  EXPECT_TRUE(fs::is_symlink(fs::symlink_status(d.file("link"))));
  EXPECT_EQ(slurp(d.file("target")), "kept");
  // A copy of /dev/null made with mknod (what a root user's `--out` once turned into a regular file).
  if (::mknod(d.file("null").c_str(), S_IFCHR | 0666, makedev(1, 3)) == 0) {
    EXPECT_TRUE(contains(write_user_file(d.file("null"), "x", kReplace), "is a character device"));
    EXPECT_TRUE(fs::is_character_file(fs::symlink_status(d.file("null"))));
  } else {
    std::printf("(mknod not permitted here: the device case is covered by /dev/null below)\n");
  }
  EXPECT_TRUE(contains(check_output_path("/dev/null", kReplace), "is a character device"));
  for (const std::string& name : d.names()) EXPECT_EQ(name.rfind(".stepformer-", 0), std::string::npos) << name;
}

TEST(UserFiles, ReplacingKeepsThePermissionBitsAndANewFileFollowsTheUmask) {
  Dir d("modes");
  const std::string path = d.file("private.txt");
  write_text(path, "old");
  ASSERT_EQ(::chmod(path.c_str(), 0600), 0);
  ASSERT_EQ(write_user_file(path, "new", kReplace), "");
  struct stat st {};
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0600u);
  EXPECT_EQ(slurp(path), "new");
  const mode_t mask = ::umask(022);
  ASSERT_EQ(write_user_file(d.file("fresh.txt"), "x", kReplace), "");
  ::umask(mask);
  ASSERT_EQ(::stat(d.file("fresh.txt").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0644u);
}

TEST(UserFiles, WithoutReplaceAnExistingFileIsKept) {
  Dir d("exists");
  write_text(d.file("notes.txt"), "mine");
  EXPECT_TRUE(contains(write_user_file(d.file("notes.txt"), "x", WriteRules{}), "exists: not replaced"));
  EXPECT_EQ(slurp(d.file("notes.txt")), "mine");
  EXPECT_EQ(d.names(), std::vector<std::string>{"notes.txt"});
}

// The race the check alone cannot close: the target appears after the check and before the file is put in place
// (another program, or the user saving there). Without replace the commit is link(2), which never replaces:
// the other file is kept. (A rename(2) there would overwrite it: the test that fails for that mutation.)
TEST(UserFiles, AFileThatAppearsBetweenTheCheckAndTheCommitIsKept) {
  Dir d("race");
  const std::string target = d.file("race.txt");
  write_test_hooks().before_commit = [&](const std::string& path) {
    ASSERT_EQ(path, target);
    write_text(path, "written meanwhile");
  };
  const std::string error = write_user_file(target, "ours", WriteRules{});
  write_test_hooks().before_commit = nullptr;
  EXPECT_TRUE(contains(error, "'" + target + "' exists: not replaced")) << error;
  EXPECT_EQ(slurp(target), "written meanwhile");
  EXPECT_EQ(d.names(), std::vector<std::string>{"race.txt"}) << "no temporary file left";
}

// When replacing, the path is checked again just before the rename: a folder or a link put there meanwhile is
// not replaced (rename would replace a link, and the file it pointed to would no longer be the one there).
TEST(UserFiles, AReplaceChecksThePathAgainBeforeTheRename) {
  Dir d("recheck");
  const std::string target = d.file("out.txt");
  write_text(target, "old");
  write_text(d.file("elsewhere.txt"), "the user's");
  write_test_hooks().before_commit = [&](const std::string& path) {
    fs::remove(path);
    fs::create_symlink(d.file("elsewhere.txt"), path);
  };
  std::string error = write_user_file(target, "new", kReplace);
  EXPECT_TRUE(contains(error, "'" + target + "' is a symbolic link, not a regular file: not written")) << error;
  EXPECT_TRUE(fs::is_symlink(target));
  EXPECT_EQ(slurp(d.file("elsewhere.txt")), "the user's");
  fs::remove(target);  // a regular file again, which a folder then takes the place of
  write_text(target, "old");
  write_test_hooks().before_commit = [&](const std::string& path) {
    fs::remove(path);
    fs::create_directory(path);
  };
  error = write_user_file(target, "new", kReplace);
  write_test_hooks().before_commit = nullptr;
  EXPECT_TRUE(contains(error, "is a folder, not a regular file: not written")) << error;
  EXPECT_TRUE(fs::is_directory(target));
  EXPECT_EQ(d.names(), (std::vector<std::string>{"elsewhere.txt", "out.txt"})) << "no temporary file left";
}

// Durable: the data are synced before the file is put in place, and the folder's entry after.
TEST(UserFiles, AWriteSyncsTheFileAndThenItsFolder) {
  Dir d("sync");
  std::vector<std::string> synced;
  std::string at_commit;
  write_test_hooks().synced = [&](const char* what) { synced.push_back(what); };
  write_test_hooks().before_commit = [&](const std::string&) { at_commit = synced.empty() ? "" : synced.back(); };
  EXPECT_EQ(write_user_file(d.file("a.txt"), "x", WriteRules{}), "");
  EXPECT_EQ(write_user_file(d.file("a.txt"), "y", kReplace), "");
  write_test_hooks() = WriteTestHooks{};
  EXPECT_EQ(synced, (std::vector<std::string>{"file", "folder", "file", "folder"}));
  EXPECT_EQ(at_commit, "file") << "the data synced before the file is put in place";
  EXPECT_EQ(slurp(d.file("a.txt")), "y");
}

TEST(UserFiles, AnAllowedFolderCannotBeLeftByDotsOrALink) {
  Dir d("allowed");
  Dir outside("outside");
  fs::create_directory(d.path / "sub");
  fs::create_directory_symlink(outside.path, d.path / "escape");
  const WriteRules rules{false, {}, d.path.string()};
  EXPECT_EQ(write_user_file(d.file("sub/in.png"), "x", rules), "");
  EXPECT_EQ(write_user_file(d.file("in.png"), "x", rules), "");
  for (const std::string& path : {d.file("sub/../../x.png"), d.file("escape/x.png"), outside.file("x.png")}) {
    const std::string error = write_user_file(path, "x", rules);
    EXPECT_TRUE(contains(error, "is outside the folder this may write to")) << path << ": " << error;
    EXPECT_TRUE(contains(error, "--allow-write")) << error;
  }
  EXPECT_TRUE(outside.names().empty());
}

TEST(UserFiles, NamesUpToTheFileSystemLimitCanBeWritten) {
  Dir d("long");
  const std::string name = std::string(251, 'n') + ".csv";  // 255 bytes: NAME_MAX
  ASSERT_EQ(write_user_file(d.file(name), "a,b\n", kReplace), "");
  ASSERT_EQ(write_user_file(d.file(name), "c,d\n", kReplace), "");  // and replaced
  EXPECT_EQ(slurp(d.file(name)), "c,d\n");
  EXPECT_EQ(d.names(), std::vector<std::string>{name});
}

TEST(UserFiles, AnUnfinishedStreamLeavesNothingBehind) {
  Dir d("stream");
  write_text(d.file("log.txt"), "the previous log");
  {
    UserFileStream s;
    ASSERT_EQ(s.open(d.file("log.txt"), kReplace), "");
    ASSERT_EQ(s.append("half a log"), "");
    EXPECT_EQ(temporary_files_in_flight(), 1);
  }  // destroyed without commit: the app died of an exception, say
  EXPECT_EQ(temporary_files_in_flight(), 0);
  EXPECT_EQ(slurp(d.file("log.txt")), "the previous log");
  EXPECT_EQ(d.names(), std::vector<std::string>{"log.txt"});
  UserFileStream s;
  ASSERT_EQ(s.open(d.file("log.txt"), kReplace), "");
  ASSERT_EQ(s.append("a "), "");
  ASSERT_EQ(s.append("whole log"), "");
  ASSERT_EQ(s.commit(), "");
  EXPECT_EQ(slurp(d.file("log.txt")), "a whole log");
  EXPECT_EQ(d.names(), std::vector<std::string>{"log.txt"});
}

// A disk that fills up in the middle of a write (here the file-size limit of a child process, RLIMIT_FSIZE, with
// SIGXFSZ ignored: write() fails as on a full disk): the error names the file, the file there before is whole,
// and no temporary file stays behind.
TEST(UserFiles, AFullDiskLeavesTheOldFileWholeAndNoTemporaryFile) {
  Dir d("full_disk");
  write_text(d.file("model.safetensors"), "the previous model");
  int result[2];
  ASSERT_EQ(::pipe(result), 0);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ::signal(SIGXFSZ, SIG_IGN);
    const rlimit limit{4096, 4096};
    if (::setrlimit(RLIMIT_FSIZE, &limit) != 0) ::_exit(3);
    const std::string error = write_user_file(d.file("model.safetensors"), std::string(1 << 20, 'x'), kReplace);
    (void)!::write(result[1], error.data(), error.size());
    ::_exit(error.empty() ? 4 : 0);
  }
  ::close(result[1]);
  std::string error;
  char buffer[512];
  for (ssize_t n; (n = ::read(result[0], buffer, sizeof buffer)) > 0;) error.append(buffer, static_cast<size_t>(n));
  ::close(result[0]);
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "the write did not fail (status " << status << ")";
  EXPECT_TRUE(contains(error, "model.safetensors")) << error;
  EXPECT_EQ(slurp(d.file("model.safetensors")), "the previous model");
  EXPECT_EQ(d.names(), std::vector<std::string>{"model.safetensors"}) << "a temporary file stayed behind";
}

// SIGTERM (or Ctrl-C) in the middle of a write: the process ends as the signal says and its temporary file goes.
TEST(UserFiles, ASignalDuringAWriteRemovesTheTemporaryFile) {
  Dir d("signal");
  for (int signal_number : {SIGTERM, SIGINT}) {
    int ready[2];
    ASSERT_EQ(::pipe(ready), 0);
    const pid_t child = ::fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
      remove_temporary_files_on_signal();
      UserFileStream s;
      if (!s.open(d.file("model.safetensors"), kReplace).empty() || !s.append("half").empty()) ::_exit(3);
      (void)::write(ready[1], "x", 1);
      ::pause();
      ::_exit(4);
    }
    char c = 0;
    ASSERT_EQ(::read(ready[0], &c, 1), 1);
    ::close(ready[0]);
    ::close(ready[1]);
    EXPECT_EQ(d.names().size(), 1u) << "the temporary file exists while the write is under way";
    ::kill(child, signal_number);
    int status = 0;
    ASSERT_EQ(::waitpid(child, &status, 0), child);
    EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == signal_number) << "status " << status;
    EXPECT_TRUE(d.names().empty()) << d.names().front();
  }
}

// A process killed with SIGKILL cannot clean up: the next write into the folder removes its temporary file once
// the process is gone and the file is an hour old, and touches nothing else.
TEST(UserFiles, AKilledProcesssTemporaryFileIsRemovedByTheNextWrite) {
  Dir d("stale");
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) ::_exit(0);
  ASSERT_EQ(::waitpid(child, nullptr, 0), child);  // a pid that is gone now
  const std::string stale = ".stepformer-" + std::to_string(child) + "-0.tmp";
  const std::string fresh = ".stepformer-" + std::to_string(child) + "-1.tmp";
  const std::string live = ".stepformer-" + std::to_string(::getppid()) + "-0.tmp";  // a process still running
  for (const std::string& name : {stale, fresh, live, std::string(".stepformer-notes.tmp")}) write_text(d.file(name), "x");
  const auto old = fs::file_time_type::clock::now() - std::chrono::hours(2);
  for (const std::string& name : {stale, live, std::string(".stepformer-notes.tmp")}) fs::last_write_time(d.file(name), old);
  ASSERT_EQ(write_user_file(d.file("out.txt"), "x", kReplace), "");
  std::vector<std::string> kept = {fresh, live, ".stepformer-notes.tmp", "out.txt"};
  std::sort(kept.begin(), kept.end());
  EXPECT_EQ(d.names(), kept);
}

// [SECTION] reading

TEST(UserFiles, ReadingAFifoADeviceOrAFolderIsRefusedAtOnce) {
  Dir d("read_kinds");
  ASSERT_EQ(::mkfifo(d.file("fifo").c_str(), 0644), 0);
  auto message = [](const std::string& path) {
    try {
      read_user_file(path, 1 << 20, "a script", "test");
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::File);
      return std::string(e.what());
    }
    return std::string("read without an error");
  };
  // A FIFO with no writer: open(2) without O_NONBLOCK would wait for one forever.
  auto fifo = std::async(std::launch::async, message, d.file("fifo"));
  ASSERT_EQ(fifo.wait_for(std::chrono::seconds(10)), std::future_status::ready) << "reading a FIFO hangs";
  EXPECT_TRUE(contains(fifo.get(), "is a FIFO (named pipe), not a regular file (a script must be a file)"));
  EXPECT_TRUE(contains(message("/dev/zero"), "'/dev/zero' is a character device, not a regular file"));
  EXPECT_TRUE(contains(message(d.path.string()), "is a folder, not a regular file"));
  EXPECT_TRUE(contains(message(d.file("missing")), "No such file or directory"));
}

TEST(UserFiles, ASizeOverTheLimitIsRefusedBeforeReading) {
  Dir d("size");
  const std::string path = d.file("big");
  {  // a sparse 3 GB file: reading it whole would take 3 GB
    std::ofstream f(path, std::ios::binary);
    f.seekp((3ull << 30) - 1);
    f.put('x');
  }
  try {
    read_user_file(path, 1 << 20, "a script", "test");
    FAIL() << "read a 3 GB file";
  } catch (const Error& e) {
    EXPECT_TRUE(contains(e.what(), "is 3.2 GB; the limit for a script is 1.0 MB")) << e.what();
  }
}

TEST(UserFiles, AFileThatShrinksWhileItIsReadIsAnError) {
  Dir d("shrink");
  write_text(d.file("f"), std::string(100, 'x'));
  const int fd = ::open(d.file("f").c_str(), O_RDONLY);
  ASSERT_GE(fd, 0);
  std::string buffer(200, '\0');
  try {  // fstat said 200 bytes; another program cut it to 100 before we read them
    read_exactly(fd, buffer.data(), 200, d.file("f"), "test");
    FAIL() << "a short read passed as the whole file";
  } catch (const Error& e) {
    EXPECT_TRUE(contains(e.what(), "changed while it was read")) << e.what();
  }
  ::close(fd);
}

// A model is read, not mapped: a file cut short by another process after it was opened cannot kill the reader
// with SIGBUS (it did with mmap, when the weights were touched): it is a File error.
TEST(UserFiles, AModelTruncatedAfterOpeningIsAnErrorNotACrash) {
  Dir d("truncated_model");
  Model m;
  m.config = testing::small_config();
  m.src_vocab = Vocabulary({"<unk>", "<pad>", "<bos>", "<eos>", "a", "b", "c", "d"}, SpecialIds{});
  m.tgt_vocab = m.src_vocab;
  m.config.src_vocab_size = m.config.tgt_vocab_size = 8;
  m.weights = testing::random_weights(m.config, 3);
  save_model(m, d.file("m.safetensors"));
  const SafetensorsFile file = SafetensorsFile::open(d.file("m.safetensors"));
  ASSERT_EQ(::truncate(d.file("m.safetensors").c_str(), 0), 0);
  try {  // the tensors are read when asked for: now an error naming the change, never SIGBUS
    load_model(file);
    FAIL() << "loaded a model from an empty file";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::File);
    EXPECT_TRUE(contains(e.what(), "changed while it was read")) << e.what();
  }
  try {  // and opening the now empty file is a clear error
    SafetensorsFile::open(d.file("m.safetensors"));
    FAIL();
  } catch (const Error& e) {
    EXPECT_TRUE(contains(e.what(), "shorter than the 8-byte header length")) << e.what();
  }
}

// A model file whose header describes a model of `d_model`, `d_ff` and `layers` (encoder and decoder each) in
// F16, the data left as a hole (a sparse file: no disk used, zeros when read). Its size is what the header says.
uint64_t write_sparse_model(const std::string& path, int d_model, int d_ff, int layers) {
  Model m;
  m.config = testing::small_config();
  m.src_vocab = Vocabulary({"<unk>", "<pad>", "<bos>", "<eos>", "a", "b", "c", "d"}, SpecialIds{});
  m.tgt_vocab = m.src_vocab;
  m.config.src_vocab_size = m.config.tgt_vocab_size = 8;
  m.weights = testing::random_weights(m.config, 3);
  std::map<std::string, std::string> metadata = SafetensorsFile::from_bytes(serialize_model(m)).metadata();
  m.config.d_model = d_model;
  m.config.d_ff = d_ff;
  m.config.n_encoder_layers = m.config.n_decoder_layers = layers;
  metadata["config"] = config_to_json(m.config).dump();
  nlohmann::json header = {{"__metadata__", metadata}};
  uint64_t offset = 0;
  for (const TensorSpec& spec : weight_layout(m.family, m.config)) {
    const uint64_t bytes = 2 * static_cast<uint64_t>(spec.numel());
    header[spec.name] = {{"dtype", "F16"}, {"shape", spec.shape}, {"data_offsets", {offset, offset + bytes}}};
    offset += bytes;
  }
  const std::string text = header.dump();
  std::string head(8, '\0');
  for (int i = 0; i < 8; ++i) head[i] = static_cast<char>((text.size() >> (8 * i)) & 0xff);
  write_text(path, head + text);
  const uint64_t size = 8 + text.size() + offset;
  EXPECT_EQ(::truncate(path.c_str(), static_cast<off_t>(size)), 0);
  return size;
}

// `info` on a sparse 1.2 GB model took 5.6 GB of memory (the file mapped, every weight converted and kept): it
// now checks every value through a small buffer and keeps none.
TEST(UserFiles, InfoOnALargeModelTakesTheMemoryOfItsHeader) {
  Dir d("sparse_model");
  const std::string path = d.file("big.safetensors");
  const uint64_t size = write_sparse_model(path, 16, 262144, 8);  // 16 layers of 16 x 262144 twice: ~0.3 GB
  ASSERT_GT(size, 250u << 20);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ::alarm(60);
    const int null = ::open("/dev/null", O_WRONLY);
    ::dup2(null, 1);
    ::dup2(null, 2);
    ::execl(STEPFORMER_CLI_PATH, STEPFORMER_CLI_PATH, "info", path.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  int status = 0;
  struct rusage usage {};
  ASSERT_EQ(::wait4(child, &status, 0, &usage), child);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "status " << status;
  EXPECT_LT(usage.ru_maxrss, 100 * 1024) << "kB of memory for info on a " << size / (1 << 20) << " MB model";
}

// A header at the limit made of as many tensor entries as fit (16 MiB of JSON objects, the worst case for the
// parser's memory): `info` reads it within a bounded multiple of its size, then names what is wrong.
TEST(UserFiles, AHeaderAtTheLimitTakesBoundedMemory) {
  Dir d("huge_header");
  const std::string path = d.file("many.safetensors");
  std::string header = "{";
  for (int i = 0; header.size() + 100 < SafetensorsFile::kMaxHeaderBytes; ++i)
    header += "\"t" + std::to_string(i) + "\":{\"dtype\":\"F32\",\"shape\":[0],\"data_offsets\":[0,0]},";
  header.back() = '}';
  {
    std::ofstream out(path, std::ios::binary);
    const uint64_t length = header.size();
    out.write(reinterpret_cast<const char*>(&length), 8);
    out << header;
  }
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ::alarm(60);
    const int null = ::open("/dev/null", O_WRONLY);
    ::dup2(null, 1);
    ::dup2(null, 2);
    ::execl(STEPFORMER_CLI_PATH, STEPFORMER_CLI_PATH, "info", path.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  int status = 0;
  struct rusage usage {};
  ASSERT_EQ(::wait4(child, &status, 0, &usage), child);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 1) << "status " << status << ": not a model, an error";
  EXPECT_LT(usage.ru_maxrss, 600 * 1024) << "kB of memory for a " << header.size() / (1 << 20) << " MB header";
}

// A corpus file of more lines than the limit (one-word lines: the most lines a size allows) is refused before its
// lines are split, naming the count and the limit.
TEST(UserFiles, ACorpusOfTooManyLinesIsRefusedBeforeItIsSplit) {
  Dir d("corpus_lines");
  std::string lines;
  for (size_t i = 0; i <= kMaxCorpusLines; ++i) lines += "a\n";
  write_text(d.file("many.de"), lines);
  try {
    read_token_lines(d.file("many.de"));
    FAIL() << "a corpus over the line limit was read";
  } catch (const Error& e) {
    EXPECT_TRUE(contains(e.what(), "has 1000001 lines; the limit for a corpus file is 1000000")) << e.what();
  }
  lines.resize(lines.size() - 2);  // exactly at the limit: read
  write_text(d.file("many.de"), lines);
  EXPECT_EQ(read_token_lines(d.file("many.de")).size(), kMaxCorpusLines);
}

// A header whose shapes would take more memory than the machine has: refused before anything is allocated.
TEST(UserFiles, AModelLargerThanTheMemoryIsRefusedBeforeAllocating) {
  Dir d("huge_model");
  const std::string path = d.file("huge.safetensors");
  const double memory = static_cast<double>(::sysconf(_SC_PHYS_PAGES)) * static_cast<double>(::sysconf(_SC_PAGE_SIZE));
  // 512 layers, each with two d_model x 262144 feed-forward matrices, 6 bytes a value loaded: past the memory.
  const int d_model = 4 * static_cast<int>(memory / (6.0 * 512 * 2 * 262144) / 4 + 1);
  write_sparse_model(path, d_model, 262144, 256);
  try {
    load_model(path);
    FAIL() << "loaded a model larger than the memory";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Config);
    EXPECT_TRUE(contains(e.what(), "GB of memory to load; this machine has")) << e.what();
  }
}

// [SECTION] limits of the core's inputs

TEST(UserFiles, TheBeamWidthAndTheSentenceLengthHaveCeilings) {
  Model m;
  m.config = testing::small_config();
  m.config.src_vocab_size = m.config.tgt_vocab_size = 8;
  m.weights = testing::random_weights(m.config, 3);
  DecodeOptions o;
  o.strategy = DecodeStrategy::Beam;
  o.beam_width = kMaxBeamWidth + 1;
  try {
    Decoder decoder(m.config, m.weights, {m.config.bos_id, 4, m.config.eos_id}, {}, o);
    FAIL() << "a beam of " << o.beam_width;
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Input);
    EXPECT_TRUE(contains(e.what(), "the beam width must be from 1 to 64, got 65")) << e.what();
  }
  o.beam_width = kMaxBeamWidth;
  EXPECT_NO_THROW(Decoder(m.config, m.weights, {m.config.bos_id, 4, m.config.eos_id}, {}, o));

  const Vocabulary v({"<unk>", "<pad>", "<bos>", "<eos>", "a"}, SpecialIds{});
  EXPECT_NO_THROW(encode(std::string(kMaxSentenceBytes, 'a'), TokenizerSettings{}, v));
  try {
    encode(std::string(kMaxSentenceBytes + 1, 'a'), TokenizerSettings{}, v);
    FAIL() << "a sentence over the limit";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Input);
    EXPECT_TRUE(contains(e.what(), "the sentence is 16385 bytes; the limit is 16384")) << e.what();
  }
}

// [SECTION] printing what files hold

TEST(Printable, ControlCharactersAndBrokenUtf8AreEscapedTheRestKept) {
  EXPECT_EQ(printable("a\x1b[2J\x1b]0;owned\x07z"), "a\\x1b[2J\\x1b]0;owned\\x07z");
  EXPECT_EQ(printable("tab\tnew\nline\x7f"), "tab\\x09new\\x0aline\\x7f");
  EXPECT_EQ(printable("\xc2\x9b" "31m"), "\\xc2\\x9b31m");             // C1 CSI as UTF-8
  EXPECT_EQ(printable("\x9b" "31m \xff \xc0\xaf"), "\\x9b31m \\xff \\xc0\\xaf");  // not UTF-8 at all (overlong too)
  EXPECT_EQ(printable("Mädchen ‚ 日本 😀"), "Mädchen ‚ 日本 😀");
  EXPECT_EQ(printable(std::string("a\0b", 3)), "a\\x00b");
  EXPECT_EQ(printable_lines("line one\x1b[A\nline two\r"), "line one\\x1b[A\nline two\\x0d");
  // Bidirectional controls reorder what follows them on screen ("safe\u202egnp.exe" shows as "safeexe.png").
  EXPECT_EQ(printable("safe\u202egnp.exe"), "safe\\u202egnp.exe");
  EXPECT_EQ(printable("\u200e\u200f\u202a\u202b\u202c\u202d\u2066\u2067\u2068\u2069\u061c"),
            "\\u200e\\u200f\\u202a\\u202b\\u202c\\u202d\\u2066\\u2067\\u2068\\u2069\\u061c");
  EXPECT_EQ(printable("\u2065\u2070\u202f"), "\u2065\u2070\u202f") << "their neighbours are printed as they are";
}

}  // namespace
}  // namespace sf
