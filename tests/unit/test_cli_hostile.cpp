// stepformer-cli under careless and hostile input (issue #15): every case a user reported, each with the files
// made here. The command must end with a clear message naming the problem, within seconds, and leave every file
// the user had as it was.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "forward_fixture.h"
#include "io/safetensors.h"
#include "model/model.h"

namespace sf {
namespace {

namespace fs = std::filesystem;

std::string slurp(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}
void write_text(const fs::path& path, const std::string& text) { std::ofstream(path, std::ios::binary) << text; }

struct Result {
  int exit_code = -1;  // -1: killed (a crash, or the 20 s alarm: a hang)
  std::string output;  // stdout and stderr together
};

class CliHostile : public ::testing::Test {
 protected:
  fs::path dir;
  fs::path model_path;

  void SetUp() override {
    dir = fs::temp_directory_path() / ("stepformer_cli_hostile_" + std::to_string(::getpid()) + "_" +
                                       ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir);
    fs::create_directories(dir);
    Model m;
    m.config = testing::small_config();
    m.config.src_vocab_size = 12;
    m.config.tgt_vocab_size = 10;
    auto vocab = [](int n) {
      std::vector<std::string> t = {"<unk>", "<pad>", "<bos>", "<eos>", "ein", "mann", "\x1b[31mred\x1b[0m"};
      for (int i = static_cast<int>(t.size()); i < n; ++i) t.push_back(std::string("w").append(std::to_string(i)));
      return Vocabulary(t, SpecialIds{});
    };
    m.src_vocab = vocab(12);
    m.tgt_vocab = vocab(10);
    m.weights = testing::random_weights(m.config, 5);
    m.provenance = {{"dataset", "\x1b]0;owned\x07\x1b[2Jcleared"}};
    model_path = dir / "m.safetensors";
    save_model(m, model_path.string());
  }
  void TearDown() override { fs::remove_all(dir); }

  // Runs stepformer-cli with these arguments (no shell), in `dir`, killed after 20 s.
  Result cli(const std::vector<std::string>& args) const {
    const fs::path log = dir / ".cli_output";
    const pid_t child = ::fork();
    if (child == 0) {
      ::alarm(20);
      if (::chdir(dir.c_str()) != 0) ::_exit(126);
      const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      ::dup2(fd, 1);
      ::dup2(fd, 2);
      std::vector<char*> argv = {const_cast<char*>(STEPFORMER_CLI_PATH)};
      for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
      argv.push_back(nullptr);
      ::execv(STEPFORMER_CLI_PATH, argv.data());
      ::_exit(127);
    }
    int status = 0;
    ::waitpid(child, &status, 0);
    Result r;
    r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    r.output = slurp(log);
    fs::remove(log);
    return r;
  }
  std::string m() const { return model_path.string(); }
  std::string at(const std::string& name) const { return (dir / name).string(); }
};

#define EXPECT_MESSAGE(result, code, text)                                                             \
  do {                                                                                                 \
    EXPECT_EQ((result).exit_code, code) << (result).output;                                            \
    EXPECT_NE((result).output.find(text), std::string::npos) << "expected '" << (text) << "' in:\n" << (result).output; \
  } while (0)

TEST_F(CliHostile, TraceNeverWritesOverItsOwnModel) {
  const std::string before = slurp(model_path);
  EXPECT_MESSAGE(cli({"trace", m(), "--src", "ein mann", "--out", m()}), 1, "is the same file as the input");
  fs::create_symlink(model_path, dir / "link.safetensors");
  EXPECT_MESSAGE(cli({"trace", at("link.safetensors"), "--src", "ein mann", "--out", m()}), 1,
                 "is the same file as the input");
  EXPECT_EQ(slurp(model_path), before);
}

TEST_F(CliHostile, EvalNeverWritesOverItsSourceAndLeavesAUsersTmpFileAlone) {
  write_text(dir / "a.de", "ein mann\n");
  write_text(dir / "a.en", "a man\n");
  EXPECT_MESSAGE(cli({"eval", m(), "--src", at("a.de"), "--ref", at("a.en"), "--out", at("a.de")}), 1,
                 "is the same file as the input");
  EXPECT_EQ(slurp(dir / "a.de"), "ein mann\n");
  write_text(dir / "F.tmp", "the user's own file");
  const Result ok = cli({"eval", m(), "--src", at("a.de"), "--ref", at("a.en"), "--out", at("F")});
  EXPECT_EQ(ok.exit_code, 0) << ok.output;
  EXPECT_EQ(slurp(dir / "F.tmp"), "the user's own file");
  EXPECT_TRUE(fs::exists(dir / "F"));
}

TEST_F(CliHostile, EvalOnADeviceThatIsNotThereSaysWhy) {
  // --device cuda where no GPU can compute: exit 1 naming why; auto: the CPU, and the summary says so.
  write_text(dir / "a.de", "ein mann\n");
  write_text(dir / "a.en", "a man\n");
  if (!backend_info().cuda_available) {
    const Result cuda = cli({"eval", m(), "--src", at("a.de"), "--ref", at("a.en"), "--device", "cuda"});
    EXPECT_EQ(cuda.exit_code, 1) << cuda.output;
    EXPECT_TRUE(cuda.output.find("GPU") != std::string::npos || cuda.output.find("CUDA") != std::string::npos)
        << cuda.output;
    const Result automatic = cli({"eval", m(), "--src", at("a.de"), "--ref", at("a.en"), "--device", "auto"});
    EXPECT_EQ(automatic.exit_code, 0) << automatic.output;
    EXPECT_NE(automatic.output.find("on the CPU"), std::string::npos) << automatic.output;
    const Result beam = cli({"eval", m(), "--src", at("a.de"), "--ref", at("a.en"), "--device", "cuda", "--beam", "4"});
    EXPECT_EQ(beam.exit_code, 1) << beam.output;
    EXPECT_TRUE(beam.output.find("GPU") != std::string::npos || beam.output.find("CUDA") != std::string::npos)
        << beam.output;
  }
  EXPECT_MESSAGE(cli({"eval", m(), "--src", at("a.de"), "--ref", at("a.en"), "--device", "tpu"}), 1, "tpu");
}

TEST_F(CliHostile, OutputsAreNeverDevicesFifosOrLinksAndKeepTheirPermissions) {
  ASSERT_EQ(::mkfifo(at("fifo").c_str(), 0644), 0);
  EXPECT_MESSAGE(cli({"trace", m(), "--src", "ein mann", "--out", at("fifo")}), 1, "is a FIFO (named pipe), not a regular file");
  EXPECT_MESSAGE(cli({"trace", m(), "--src", "ein mann", "--out", "/dev/null"}), 1, "'/dev/null' is a character device");
  EXPECT_TRUE(fs::is_character_file("/dev/null"));
  write_text(dir / "elsewhere", "kept");
  fs::create_symlink(dir / "elsewhere", dir / "out.safetensors");
  EXPECT_MESSAGE(cli({"trace", m(), "--src", "ein mann", "--out", at("out.safetensors")}), 1, "is a symbolic link");
  EXPECT_EQ(slurp(dir / "elsewhere"), "kept");
  write_text(dir / "private.safetensors", "old");
  ASSERT_EQ(::chmod(at("private.safetensors").c_str(), 0600), 0);
  const Result r = cli({"trace", m(), "--src", "ein mann", "--out", at("private.safetensors")});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  struct stat st {};
  ASSERT_EQ(::stat(at("private.safetensors").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0600u);
  EXPECT_GT(st.st_size, 100);
  for (const auto& e : fs::directory_iterator(dir))
    EXPECT_EQ(e.path().filename().string().rfind(".stepformer-", 0), std::string::npos) << e.path();
}

TEST_F(CliHostile, AFifoOrADeviceAsAnInputIsRefusedWithoutHanging) {
  ASSERT_EQ(::mkfifo(at("fifo").c_str(), 0644), 0);
  EXPECT_MESSAGE(cli({"info", at("fifo")}), 1, "is a FIFO (named pipe), not a regular file (a model file must be a file)");
  EXPECT_MESSAGE(cli({"info", "/dev/zero"}), 1, "'/dev/zero' is a character device");
  write_text(dir / "a.en", "a man\n");
  EXPECT_MESSAGE(cli({"eval", m(), "--src", "/dev/zero", "--ref", at("a.en")}), 1, "'/dev/zero' is a character device");
  EXPECT_MESSAGE(cli({"eval", m(), "--src", at("fifo"), "--ref", at("a.en")}), 1, "is a FIFO");
}

TEST_F(CliHostile, NothingToTranslateIsAnErrorNotATranslation) {
  EXPECT_MESSAGE(cli({"translate", m(), ""}), 1, "the sentence is empty");
  EXPECT_MESSAGE(cli({"translate", m(), "  \t "}), 1, "the sentence is blank");
  EXPECT_MESSAGE(cli({"translate", m()}), 2, "is a file, not a sentence");  // the model's path is no sentence
  EXPECT_MESSAGE(cli({"trace", m(), "--src", " ", "--out", at("t.safetensors")}), 1, "the sentence is blank");
  EXPECT_FALSE(fs::exists(dir / "t.safetensors"));
  EXPECT_MESSAGE(cli({"translate", m(), std::string(20000, 'a')}), 1, "the limit is 16384");
  // A sentence alone, longer than a file name may be (255 bytes): translated, not "File name too long".
  std::string long_sentence;
  for (int i = 0; i < 30; ++i) long_sentence += "ein mann geht über die straße ";
  const auto translated = cli({"translate", long_sentence});
  EXPECT_EQ(translated.exit_code, 0) << translated.output;
  EXPECT_NE(translated.output.find("man"), std::string::npos) << translated.output;
}

TEST_F(CliHostile, BadNumbersNameTheOptionTheValueAndTheRange) {
  EXPECT_MESSAGE(cli({"trace", m(), "--src", "ein", "--max-length", "abc", "--out", at("t")}), 1,
                 "--max-length needs a whole number of tokens (1 to the model's max positions), got 'abc'");
  EXPECT_MESSAGE(cli({"trace", m(), "--src", "ein", "--max-length", "100000", "--out", at("t")}), 1,
                 "is more than the model's");
  EXPECT_MESSAGE(cli({"translate", m(), "ein", "--beam", "100000"}), 2, "--beam needs a whole number from 1 to 64, got '100000'");
  EXPECT_MESSAGE(cli({"train", "--data", at("."), "--out", at("x"), "--seed", "99999999999999999999999"}), 2,
                 "--seed needs a whole number from 0 to 18446744073709551615");
  EXPECT_MESSAGE(cli({"trace", m(), "--src", "ein", "--head-off", "enc.8.1", "--out", at("t")}), 1, "head-off");
}

TEST_F(CliHostile, EvalRefusesALineLongerThanTheModelInsteadOfCuttingIt) {
  std::string long_line;
  for (int i = 0; i < 300; ++i) long_line += "ein ";
  write_text(dir / "a.de", "ein mann\n" + long_line + "\n");
  write_text(dir / "a.en", "a man\na\n");
  EXPECT_MESSAGE(cli({"eval", m(), "--src", at("a.de"), "--ref", at("a.en")}), 1, "line 2 has 300 tokens; the model accepts at most");
}

TEST_F(CliHostile, ControlCharactersFromTheFileAreEscapedWhenPrinted) {
  const Result r = cli({"info", m()});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output.find('\x1b'), std::string::npos) << "a raw ESC reached the terminal";
  EXPECT_EQ(r.output.find('\x07'), std::string::npos);
  EXPECT_NE(r.output.find("\\x1b]0;owned\\x07\\x1b[2Jcleared"), std::string::npos) << r.output;
  const Result json = cli({"info", m(), "--json"});
  EXPECT_EQ(json.exit_code, 0) << json.output;
  EXPECT_EQ(json.output.find('\x1b'), std::string::npos);
  const Result tokens = cli({"translate", m(), "ein mann", "--tokens"});
  EXPECT_EQ(tokens.output.find('\x1b'), std::string::npos) << tokens.output;
}

TEST_F(CliHostile, UnknownConfigKeysAreWarnedAbout) {
  // The same model with a misspelt key in its config: loading it names the key.
  SafetensorsFile file = SafetensorsFile::open(m());
  std::map<std::string, std::string> metadata = file.metadata();
  nlohmann::json config = nlohmann::json::parse(metadata.at("config"));
  config["d_modle"] = 512;
  metadata["config"] = config.dump();
  std::vector<std::vector<float>> values;
  std::vector<TensorToWrite> tensors;
  for (const TensorView& t : file.tensors()) values.push_back(t.to_floats());
  for (size_t i = 0; i < values.size(); ++i) tensors.push_back({file.tensors()[i].name, file.tensors()[i].shape, values[i]});
  write_safetensors(at("typo.safetensors"), tensors, metadata);
  const Result r = cli({"translate", at("typo.safetensors"), "ein mann"});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("warning: config key 'd_modle' is not one this version knows"), std::string::npos) << r.output;
  const Result info = cli({"info", at("typo.safetensors")});
  EXPECT_NE(info.output.find("config key 'd_modle'"), std::string::npos) << info.output;
}

TEST_F(CliHostile, UnknownTokenizerKeysAreWarnedAbout) {
  SafetensorsFile file = SafetensorsFile::open(m());
  std::map<std::string, std::string> metadata = file.metadata();
  nlohmann::json tokenizer = nlohmann::json::parse(metadata.at("tokenizer"));
  tokenizer["lowercsae"] = false;
  metadata["tokenizer"] = tokenizer.dump();
  std::vector<std::vector<float>> values;
  std::vector<TensorToWrite> tensors;
  for (const TensorView& t : file.tensors()) values.push_back(t.to_floats());
  for (size_t i = 0; i < values.size(); ++i) tensors.push_back({file.tensors()[i].name, file.tensors()[i].shape, values[i]});
  write_safetensors(at("typo.safetensors"), tensors, metadata);
  const Result r = cli({"translate", at("typo.safetensors"), "ein mann"});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("warning: tokenizer key 'lowercsae' is not one this version knows"), std::string::npos)
      << r.output;
}

// Vocabulary entries reach the terminal escaped: the special tokens `info` lists and the tokens `translate
// --tokens` prints (an unknown word shows as the <unk> token's text).
TEST_F(CliHostile, ControlCharactersInTheVocabularyAreEscapedWhenPrinted) {
  Model hostile = load_model(m());
  auto vocab = [](int n) {
    std::vector<std::string> t = {"<unk\x1b[2J>", "<pad>", "<bos\x07>", "<eos>", "ein", "mann"};
    for (int i = static_cast<int>(t.size()); i < n; ++i) t.push_back(std::string("w").append(std::to_string(i)));
    return Vocabulary(t, SpecialIds{});
  };
  hostile.src_vocab = vocab(12);
  hostile.tgt_vocab = vocab(10);
  save_model(hostile, at("escapes.safetensors"));
  const Result info = cli({"info", at("escapes.safetensors")});
  EXPECT_EQ(info.exit_code, 0) << info.output;
  EXPECT_EQ(info.output.find('\x1b'), std::string::npos) << info.output;
  EXPECT_EQ(info.output.find('\x07'), std::string::npos) << info.output;
  EXPECT_NE(info.output.find("<unk\\x1b[2J>"), std::string::npos) << info.output;
  const Result tokens = cli({"translate", at("escapes.safetensors"), "ein unbekanntes mann", "--tokens"});
  EXPECT_EQ(tokens.exit_code, 0) << tokens.output;
  EXPECT_EQ(tokens.output.find('\x1b'), std::string::npos) << tokens.output;
  EXPECT_EQ(tokens.output.find('\x07'), std::string::npos) << tokens.output;
  EXPECT_NE(tokens.output.find("<bos\\x07>"), std::string::npos) << tokens.output;
}

// With no model named, eval reads the shipped one: its --out can no more be that model than a named one.
TEST_F(CliHostile, EvalNeverWritesOverTheShippedModelItReadsByDefault) {
  write_text(at("src.txt"), "ein mann\n");
  write_text(at("ref.txt"), "a man\n");
  const std::string shipped = std::string(STEPFORMER_SOURCE_DIR) + "/assets/models/de-en.safetensors";
  const auto before = fs::last_write_time(shipped);
  EXPECT_MESSAGE(cli({"eval", "--src", "src.txt", "--ref", "ref.txt", "--out", shipped}), 1,
                 "is the same file as the input");
  EXPECT_EQ(fs::last_write_time(shipped), before);
}

class CliTrainHostile : public CliHostile {
 protected:
  void SetUp() override {
    CliHostile::SetUp();
    fs::create_directories(dir / "data");
    for (const char* split : {"train", "val"}) {
      write_text(dir / "data" / (std::string(split) + ".lc.norm.tok.de"), "ein mann\neine frau\n");
      write_text(dir / "data" / (std::string(split) + ".lc.norm.tok.en"), "a man\na woman\n");
    }
  }
};

TEST_F(CliTrainHostile, AbsurdSizesEmptyDataAndCollidingOutputsAreRefusedBeforeTraining) {
  const std::string data = at("data");
  EXPECT_MESSAGE(cli({"train", "--data", data, "--out", at("big.safetensors"), "--d-model", "4096", "--d-ff", "65536",
                      "--encoder-layers", "64", "--decoder-layers", "64", "--heads", "64"}),
                 1, "needs about");
  EXPECT_FALSE(fs::exists(dir / "big.safetensors"));
  EXPECT_MESSAGE(cli({"train", "--data", data, "--out", at("m2.safetensors"), "--checkpoint", at("m2.safetensors")}), 1,
                 "the checkpoint and the model would be the same file");
  EXPECT_MESSAGE(cli({"train", "--data", data, "--out", (dir / "data" / "train.lc.norm.tok.en").string()}), 1,
                 "is the same file as the input");
  EXPECT_EQ(slurp(dir / "data" / "train.lc.norm.tok.en"), "a man\na woman\n");
  // A damaged checkpoint where a resume looks for one: named, not a crash or a raw library message.
  write_safetensors(at("resume.safetensors.checkpoint"), {},
                    {{"stepformer_checkpoint", std::string(100000, '[')}});
  EXPECT_MESSAGE(cli({"train", "--data", data, "--out", at("resume.safetensors")}), 1, "nests deeper than");
  write_safetensors(at("resume.safetensors.checkpoint"), {}, {{"stepformer_checkpoint", "{\"step\": \"x\"}"}});
  EXPECT_MESSAGE(cli({"train", "--data", data, "--out", at("resume.safetensors")}), 1, "belongs to another run");
  write_text(dir / "data" / "train.lc.norm.tok.de", "");
  write_text(dir / "data" / "train.lc.norm.tok.en", "");
  EXPECT_MESSAGE(cli({"train", "--data", data, "--out", at("empty.safetensors")}), 1,
                 "has no sentences: nothing to train on");
  EXPECT_FALSE(fs::exists(dir / "empty.safetensors"));
}

}  // namespace
}  // namespace sf
