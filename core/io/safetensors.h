// safetensors: read (into memory, io/user_files.h) and write (atomically, io/user_files.h) the tensor file format of Hugging Face
// (https://github.com/huggingface/safetensors). Layout of a file:
//
//   [8 bytes]  N, unsigned 64-bit little-endian: the length of the header
//   [N bytes]  header: a UTF-8 JSON object, optionally padded at the end with spaces
//                { "__metadata__": {"key": "value", ...},          (optional; string values only)
//                  "name": {"dtype": "F32", "shape": [2, 3], "data_offsets": [begin, end]}, ... }
//   [rest]     data: the tensors' bytes, row-major, little-endian; data_offsets are relative to the start of
//              this region. Tensors may not overlap, and they cover the region with no holes.
//
// The reader trusts nothing in the file: the header length is checked against the file size and a cap, the
// JSON against its nesting depth, every shape against overflow, every span against the data region and the
// other spans. Any fault is an sf::Error(ErrorKind::Format) that names the tensor and the numbers at fault.
#pragma once
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "io/user_files.h"

namespace sf {

// The dtypes of the safetensors specification. Stepformer reads F32, F16, BF16 (and F64) as float, and writes
// F32 or F16; the other dtypes are recognised (so their byte sizes can be checked) but not converted.
enum class DType { BOOL, U8, I8, F8_E4M3, F8_E5M2, I16, U16, F16, BF16, I32, U32, F32, I64, U64, F64 };

const char* dtype_name(DType dtype);                       // "F32"
size_t dtype_size(DType dtype);                            // bytes per element
std::optional<DType> dtype_from_name(std::string_view name);  // nullopt for a name outside the spec
bool dtype_is_float_readable(DType dtype);                 // F32, F16, BF16, F64

// Scalar conversions (IEEE 754 binary16 and bfloat16; round to nearest even when narrowing).
float f16_to_float(uint16_t bits);
uint16_t float_to_f16(float value);   // values beyond the F16 range become +-Inf
float bf16_to_float(uint16_t bits);

struct SafetensorsStorage;  // where a file's tensor bytes are: in memory, or still in the file (safetensors.cpp)

// One tensor of an opened file. Its bytes are read when asked for (from the file opened by SafetensorsFile::open,
// or from memory for from_bytes): valid while the SafetensorsFile (or a copy of it) lives.
struct TensorView {
  std::string name;
  DType dtype = DType::F32;
  std::vector<int64_t> shape;       // empty for a scalar

  int64_t numel() const;
  uint64_t byte_count() const { return static_cast<uint64_t>(numel()) * dtype_size(dtype); }
  // Converts to float (F32, F16, BF16, F64); throws ErrorKind::Format for other dtypes, ErrorKind::File when
  // the file has changed since it was opened.
  void read_floats(std::span<float> out) const;  // out.size() must equal numel()
  // Elements [first, first + out.size()): a large tensor in pieces, with a small buffer.
  void read_floats(int64_t first, std::span<float> out) const;
  std::vector<float> to_floats() const;
  // The raw little-endian bytes, byte_count() of them (integer tensors).
  std::vector<std::byte> read_bytes() const;

  const SafetensorsStorage* storage = nullptr;  // set by SafetensorsFile
  uint64_t offset = 0;                          // of the first byte, from the start of the file
};

class SafetensorsFile {
 public:
  // 16 MiB: a header with the vocabularies, the config and a thousand tensors takes a few MB at most; parsing
  // JSON takes about 20 times its size in memory, so this bounds what a hostile header can make us allocate.
  static constexpr uint64_t kMaxHeaderBytes = 16u << 20;

  // Opens `path` (a regular file, opened without blocking: a FIFO or a device is refused, never waited on) and
  // reads and parses its header only; tensors are read with pread(2) when asked for, so memory is bounded by
  // what the caller reads, not by the file's size, and a file cut short later is an error, not a SIGBUS.
  // Throws ErrorKind::File when the file cannot be opened or read or is not a regular file; ErrorKind::Format
  // when it is malformed.
  static SafetensorsFile open(const std::string& path);
  // Parses a file image held in memory (copied). `origin` names it in error messages. For tests and fuzzing.
  static SafetensorsFile from_bytes(std::span<const std::byte> bytes, const std::string& origin = "<memory>");

  const std::string& origin() const { return origin_; }   // the path, or the name given to from_bytes
  const std::vector<TensorView>& tensors() const { return tensors_; }  // ordered by data offset
  const TensorView* find(std::string_view name) const;    // nullptr when absent
  // Makes find(alias) return the tensor `name` (a checkpoint that stores a tied matrix under another of its
  // names); tensors() is unchanged. False when `name` is absent or `alias` already names a tensor.
  bool add_alias(const std::string& alias, const std::string& name);
  const std::map<std::string, std::string>& metadata() const { return metadata_; }
  uint64_t file_size() const { return file_size_; }

 private:
  void parse(const std::byte* header_and_length, uint64_t file_size);

  std::shared_ptr<const SafetensorsStorage> storage_;  // shared by copies of this object
  std::string origin_;
  uint64_t file_size_ = 0;
  std::vector<TensorView> tensors_;
  std::unordered_map<std::string, size_t> index_;  // name -> position in tensors_
  std::map<std::string, std::string> metadata_;
};

// A tensor to write: float values, row-major, numel(shape) of them.
struct TensorToWrite {
  std::string name;
  std::vector<int64_t> shape;
  std::span<const float> values;
  // Instead of values: 8-bit integers, stored as I8 whatever the file's storage (quantised weights).
  std::span<const int8_t> int8_values = {};
  bool keep_f32 = false;  // values stored as F32 whatever the file's storage (the scales of quantised weights)
};

// Writes a safetensors file with the given tensors (in this order) and __metadata__, storing values as
// `storage` (F32 or F16; anything else is ErrorKind::Unsupported). Written by write_user_file under `rules`
// (io/user_files.h: atomic, never onto an input, a link or a non-regular file; by default an existing regular
// file is replaced); on any failure an existing file at `path` is left untouched and ErrorKind::File thrown. Throws ErrorKind::Value for a value that does not
// fit the storage dtype (|x| > 65504 in F16), ErrorKind::Format for duplicate names or a wrong value count.
void write_safetensors(const std::string& path, const std::vector<TensorToWrite>& tensors,
                       const std::map<std::string, std::string>& metadata, DType storage = DType::F32,
                       const WriteRules& rules = WriteRules{true, {}, {}});

// The same bytes as write_safetensors, in memory (for tests and the fuzzer's seed corpus).
std::vector<std::byte> serialize_safetensors(const std::vector<TensorToWrite>& tensors,
                                             const std::map<std::string, std::string>& metadata,
                                             DType storage = DType::F32);

}  // namespace sf
