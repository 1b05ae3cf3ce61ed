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

// One tensor of an opened file. `bytes` points into the file's bytes in memory and stays valid while the
// SafetensorsFile (or a copy of it) lives.
struct TensorView {
  std::string name;
  DType dtype = DType::F32;
  std::vector<int64_t> shape;       // empty for a scalar
  std::span<const std::byte> bytes; // numel() * dtype_size(dtype) bytes

  int64_t numel() const;
  // Converts to float (F32, F16, BF16, F64); throws ErrorKind::Format for other dtypes.
  void read_floats(std::span<float> out) const;  // out.size() must equal numel()
  std::vector<float> to_floats() const;
};

class SafetensorsFile {
 public:
  static constexpr uint64_t kMaxHeaderBytes = 100u << 20;  // 100 MiB: no real header comes near this

  // Reads `path` whole (a regular file of at most max_file_bytes(), opened without blocking) and parses the
  // header. Throws ErrorKind::File when the file cannot be opened or read, is not a regular file, is too large
  // or shrinks while it is read; ErrorKind::Format when it is malformed.
  static SafetensorsFile open(const std::string& path);
  // The largest file open() reads: half this machine's memory, at most 16 GB.
  static uint64_t max_file_bytes();
  // Parses a file image held in memory (copied). `origin` names it in error messages. For tests and fuzzing.
  static SafetensorsFile from_bytes(std::span<const std::byte> bytes, const std::string& origin = "<memory>");

  const std::string& origin() const { return origin_; }   // the path, or the name given to from_bytes
  const std::vector<TensorView>& tensors() const { return tensors_; }  // ordered by data offset
  const TensorView* find(std::string_view name) const;    // nullptr when absent
  const std::map<std::string, std::string>& metadata() const { return metadata_; }
  uint64_t file_size() const { return file_size_; }

 private:
  struct Storage;  // the file's bytes; shared by copies of this object
  void parse();

  std::shared_ptr<const Storage> storage_;
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
