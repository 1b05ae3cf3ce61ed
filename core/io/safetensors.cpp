#include "io/safetensors.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <functional>
#include <nlohmann/json.hpp>

#include "io/user_files.h"
#include "io/json_text.h"
#include "util/error.h"
#include "util/tensor.h"

namespace sf {

using nlohmann::json;

// [SECTION] dtypes and scalar conversions

namespace {

struct DTypeInfo {
  DType dtype;
  const char* name;
  size_t size;
};

constexpr DTypeInfo kDTypes[] = {
    {DType::BOOL, "BOOL", 1}, {DType::U8, "U8", 1},   {DType::I8, "I8", 1},     {DType::F8_E4M3, "F8_E4M3", 1},
    {DType::F8_E5M2, "F8_E5M2", 1}, {DType::I16, "I16", 2}, {DType::U16, "U16", 2}, {DType::F16, "F16", 2},
    {DType::BF16, "BF16", 2}, {DType::I32, "I32", 4}, {DType::U32, "U32", 4}, {DType::F32, "F32", 4},
    {DType::I64, "I64", 8}, {DType::U64, "U64", 8}, {DType::F64, "F64", 8},
};

const DTypeInfo& info(DType d) {
  for (const auto& i : kDTypes)
    if (i.dtype == d) return i;
  return kDTypes[0];  // unreachable: every enumerator is in the table
}

}  // namespace

const char* dtype_name(DType dtype) { return info(dtype).name; }
size_t dtype_size(DType dtype) { return info(dtype).size; }

std::optional<DType> dtype_from_name(std::string_view name) {
  for (const auto& i : kDTypes)
    if (name == i.name) return i.dtype;
  return std::nullopt;
}

bool dtype_is_float_readable(DType d) {
  return d == DType::F32 || d == DType::F16 || d == DType::BF16 || d == DType::F64;
}

float f16_to_float(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exponent = (h >> 10) & 0x1fu;
  const uint32_t mantissa = h & 0x3ffu;
  if (exponent == 0) {  // zero or subnormal: mantissa * 2^-24
    const float magnitude = std::ldexp(static_cast<float>(mantissa), -24);
    return sign ? -magnitude : magnitude;
  }
  uint32_t bits;
  if (exponent == 31)
    bits = sign | 0x7f800000u | (mantissa << 13);  // Inf or NaN (payload kept)
  else
    bits = sign | ((exponent + 112) << 23) | (mantissa << 13);  // rebias 15 -> 127
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

uint16_t float_to_f16(float value) {
  uint32_t x;
  std::memcpy(&x, &value, sizeof x);
  const uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000u);
  const uint32_t magnitude = x & 0x7fffffffu;
  if (magnitude >= 0x7f800000u) return sign | 0x7c00u | (magnitude > 0x7f800000u ? 0x200u : 0u);  // Inf, NaN
  if (magnitude >= 0x477ff000u) return sign | 0x7c00u;  // >= 65520 rounds (ties to even) past 65504: Inf
  if (magnitude < 0x38800000u) {                        // below 2^-14: subnormal, mantissa = round(|x| * 2^24)
    float abs_value;
    std::memcpy(&abs_value, &magnitude, sizeof abs_value);
    return sign | static_cast<uint16_t>(std::nearbyint(abs_value * 16777216.0f));
  }
  uint32_t h = (((magnitude >> 23) - 112) << 10) | ((magnitude >> 13) & 0x3ffu);
  const uint32_t rest = magnitude & 0x1fffu;  // the 13 bits dropped: round to nearest, ties to even
  if (rest > 0x1000u || (rest == 0x1000u && (h & 1u))) ++h;  // a carry correctly bumps the exponent
  return sign | static_cast<uint16_t>(h);
}

float bf16_to_float(uint16_t bits) {
  const uint32_t widened = static_cast<uint32_t>(bits) << 16;
  float f;
  std::memcpy(&f, &widened, sizeof f);
  return f;
}

// [SECTION] TensorView

int64_t TensorView::numel() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;  // cannot overflow: checked when the header was parsed
  return n;
}

// [SECTION] reader storage

// A file's tensor bytes: the open descriptor (SafetensorsFile::open, read with pread when asked for), or the
// whole image in memory (from_bytes).
struct SafetensorsStorage {
  int fd = -1;
  std::string path;
  std::vector<std::byte> image;  // from_bytes: the whole file; open: unused
  SafetensorsStorage() = default;
  SafetensorsStorage(const SafetensorsStorage&) = delete;
  SafetensorsStorage& operator=(const SafetensorsStorage&) = delete;
  ~SafetensorsStorage() {
    if (fd >= 0) ::close(fd);
  }

  void read(uint64_t offset, void* out, uint64_t size) const {
    if (fd < 0) {
      if (size) std::memcpy(out, image.data() + offset, size);
      return;
    }
    auto* p = static_cast<char*>(out);
    for (uint64_t done = 0; done < size;) {
      const ssize_t n = ::pread(fd, p + done, static_cast<size_t>(std::min<uint64_t>(size - done, 1u << 30)),
                                static_cast<off_t>(offset + done));
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) {
        const std::string why = std::strerror(errno);
        fail(ErrorKind::File, ErrorCode::FileCannotRead, "load_safetensors", {{"path", path}, {"reason", why}},
             "cannot read '" + path + "': " + why);
      }
      if (n == 0)
        fail(ErrorKind::File, ErrorCode::FileChanged, "load_safetensors", {{"path", path}},
             "'" + path + "' changed while it was read: it ends before byte " + std::to_string(offset + size) +
                 " (another program is writing it; open it again when it has finished)");
      done += static_cast<uint64_t>(n);
    }
  }
};

void TensorView::read_floats(std::span<float> out) const {
  const size_t n = static_cast<size_t>(numel());
  if (out.size() != n)
    fail(ErrorKind::Shape, "TensorView::read_floats",
         "tensor '" + name + "' has " + std::to_string(n) + " values, output holds " + std::to_string(out.size()));
  read_floats(0, out);
}

void TensorView::read_floats(int64_t first, std::span<float> out) const {
  if (!dtype_is_float_readable(dtype))
    fail(ErrorKind::Format, ErrorCode::TensorDtypeUnsupported, "TensorView::read_floats",
         {{"tensor", name}, {"dtype", dtype_name(dtype)}},
         "tensor '" + name + "' has dtype " + dtype_name(dtype) + ", which cannot be read as float (expected F32, "
         "F16 or BF16)");
  if (first < 0 || first + static_cast<int64_t>(out.size()) > numel())
    fail(ErrorKind::Shape, "TensorView::read_floats",
         "tensor '" + name + "': elements [" + std::to_string(first) + ", " +
             std::to_string(first + static_cast<int64_t>(out.size())) + ") are outside its " + std::to_string(numel()));
  const size_t elem = dtype_size(dtype);
  // Through a buffer of at most 1 MiB: a tensor read from the file never needs a second copy of itself.
  constexpr size_t kChunk = 1 << 20;
  std::vector<std::byte> buffer(std::min(out.size() * elem, kChunk));
  for (size_t done = 0; done < out.size();) {
    const size_t count = std::min(out.size() - done, kChunk / elem);
    storage->read(offset + (static_cast<uint64_t>(first) + done) * elem, buffer.data(), count * elem);
    const std::byte* p = buffer.data();
    float* o = out.data() + done;
    // memcpy per element: the data carry no alignment guarantee.
    switch (dtype) {
      case DType::F32:
        std::memcpy(o, p, count * 4);
        break;
      case DType::F16:
      case DType::BF16:
        for (size_t i = 0; i < count; ++i) {
          uint16_t bits;
          std::memcpy(&bits, p + 2 * i, 2);
          o[i] = dtype == DType::F16 ? f16_to_float(bits) : bf16_to_float(bits);
        }
        break;
      default:  // F64
        for (size_t i = 0; i < count; ++i) {
          double d;
          std::memcpy(&d, p + 8 * i, 8);
          o[i] = static_cast<float>(d);
        }
    }
    done += count;
  }
}

std::vector<float> TensorView::to_floats() const {
  std::vector<float> v(static_cast<size_t>(numel()));
  read_floats(v);
  return v;
}

std::vector<std::byte> TensorView::read_bytes() const {
  std::vector<std::byte> bytes(static_cast<size_t>(byte_count()));
  storage->read(offset, bytes.data(), bytes.size());
  return bytes;
}

// [SECTION] reader

namespace {

std::string offsets_string(uint64_t begin, uint64_t end) {
  std::string s = "[";
  s += std::to_string(begin);
  s += ", ";
  s += std::to_string(end);
  s += ')';
  return s;
}

uint64_t header_length(const std::byte* first8) {
  uint64_t header_len = 0;
  for (int i = 7; i >= 0; --i) header_len = (header_len << 8) | static_cast<uint8_t>(first8[i]);  // little-endian
  return header_len;
}

}  // namespace

SafetensorsFile SafetensorsFile::open(const std::string& path) {
  const char* where = "load_safetensors";
  uint64_t size = 0;
  auto storage = std::make_shared<SafetensorsStorage>();
  storage->fd = open_regular_file(path, UINT64_MAX, "a model file", where, &size);  // closed by the storage
  storage->path = path;
  // The 8-byte length and the header: all that is read now (the tensors when asked for).
  std::vector<std::byte> head(static_cast<size_t>(std::min<uint64_t>(size, 8)));
  storage->read(0, head.data(), head.size());
  if (size >= 8) {
    const uint64_t header_len = header_length(head.data());
    if (header_len <= size - 8 && header_len <= kMaxHeaderBytes) {  // else parse() names the fault
      head.resize(static_cast<size_t>(8 + header_len));
      storage->read(8, head.data() + 8, header_len);
    }
  }
  SafetensorsFile file;
  file.storage_ = storage;
  file.origin_ = path;
  file.parse(head.data(), size);
  return file;
}

SafetensorsFile SafetensorsFile::from_bytes(std::span<const std::byte> bytes, const std::string& origin) {
  auto storage = std::make_shared<SafetensorsStorage>();
  storage->image.assign(bytes.begin(), bytes.end());
  SafetensorsFile file;
  file.storage_ = storage;
  file.origin_ = origin;
  file.parse(storage->image.data(), storage->image.size());
  return file;
}

const TensorView* SafetensorsFile::find(std::string_view name) const {
  const auto it = index_.find(std::string(name));
  return it == index_.end() ? nullptr : &tensors_[it->second];
}

bool SafetensorsFile::add_alias(const std::string& alias, const std::string& name) {
  const auto it = index_.find(name);
  if (it == index_.end() || index_.count(alias)) return false;
  const size_t position = it->second;
  index_.emplace(alias, position);
  return true;
}

void SafetensorsFile::parse(const std::byte* base, uint64_t size) {
  // `base` holds the first min(size, 8 + header length) bytes of the file (all of it for from_bytes).
  const std::string where = "load_safetensors";
  // A malformed header: the code says which fault a user can be told in their words; the rest are said by
  // SafetensorsBadHeader with the English detail as its value.
  auto bad_as = [&](ErrorCode code, std::vector<ErrorValue> values, const std::string& what) {
    fail(ErrorKind::Format, code, where, std::move(values), "'" + origin_ + "': " + what);
  };
  auto bad = [&](const std::string& what) {
    bad_as(ErrorCode::SafetensorsBadHeader, {{"path", origin_}, {"problem", what}}, what);
  };
  file_size_ = size;

  if (size < 8)
    bad_as(ErrorCode::SafetensorsTruncated, {{"path", origin_}, {"size", size}},
           "the file is " + std::to_string(size) + " bytes, shorter than the 8-byte header length: truncated or "
           "not a safetensors file");
  const uint64_t header_len = header_length(base);
  if (header_len > size - 8)
    bad_as(ErrorCode::SafetensorsTruncated, {{"path", origin_}, {"size", size}},
           "header length " + std::to_string(header_len) + " runs past the end of the file (" +
               std::to_string(size) + " bytes): truncated or not a safetensors file");
  if (header_len > kMaxHeaderBytes)
    bad("header length " + std::to_string(header_len) + " exceeds the limit of " + std::to_string(kMaxHeaderBytes) +
        " bytes");
  if (header_len < 2) bad("header length " + std::to_string(header_len) + " is too short for a JSON object");

  const std::string_view text(reinterpret_cast<const char*>(base + 8), static_cast<size_t>(header_len));
  if (text.front() != '{') bad("the header does not start with '{': not a safetensors file");
  const json header = parse_json_text(text, where, "'" + origin_ + "': the header");
  if (!header.is_object()) bad("the header is not a JSON object");

  const uint64_t data_size = size - 8 - header_len;
  const uint64_t data_start = 8 + header_len;

  struct Span {
    uint64_t begin, end;
    size_t index;
  };
  std::vector<Span> spans;
  for (const auto& [name, entry] : header.items()) {
    if (name == "__metadata__") {
      if (!entry.is_object()) bad("__metadata__ is not a JSON object");
      for (const auto& [key, value] : entry.items()) {
        if (!value.is_string()) bad("__metadata__ key '" + key + "' is not a string (safetensors metadata maps strings to strings)");
        metadata_[key] = value.get<std::string>();
      }
      continue;
    }
    const std::string tensor = "tensor '" + name + "'";
    if (!entry.is_object()) bad(tensor + ": entry is not a JSON object");
    const auto dtype_it = entry.find("dtype");
    const auto shape_it = entry.find("shape");
    const auto offsets_it = entry.find("data_offsets");
    if (dtype_it == entry.end() || shape_it == entry.end() || offsets_it == entry.end())
      bad(tensor + ": entry needs 'dtype', 'shape' and 'data_offsets'");
    if (!dtype_it->is_string()) bad(tensor + ": dtype is not a string");
    const std::string dtype_text = dtype_it->get<std::string>();
    const auto dtype = dtype_from_name(dtype_text);
    if (!dtype)
      bad_as(ErrorCode::UnknownDtype, {{"path", origin_}, {"tensor", name}, {"dtype", dtype_text}},
             tensor + ": unknown dtype '" + dtype_text + "'");

    if (!shape_it->is_array()) bad(tensor + ": shape is not an array");
    if (shape_it->size() > 8) bad(tensor + ": shape has " + std::to_string(shape_it->size()) + " dimensions (at most 8)");
    std::vector<int64_t> shape;
    uint64_t numel = 1;
    for (const auto& d : *shape_it) {
      if (!d.is_number_unsigned()) bad(tensor + ": shape " + shape_it->dump() + " holds a value that is not a non-negative integer");
      const uint64_t dim = d.get<uint64_t>();
      if (dim > static_cast<uint64_t>(INT64_MAX) || __builtin_mul_overflow(numel, dim, &numel) ||
          numel > static_cast<uint64_t>(INT64_MAX))
        bad(tensor + ": shape " + shape_it->dump() + " has too many elements");
      shape.push_back(static_cast<int64_t>(dim));
    }
    uint64_t byte_count = 0;
    if (__builtin_mul_overflow(numel, static_cast<uint64_t>(dtype_size(*dtype)), &byte_count))
      bad(tensor + ": shape " + shape_it->dump() + " has too many elements");

    if (!offsets_it->is_array() || offsets_it->size() != 2 || !(*offsets_it)[0].is_number_unsigned() ||
        !(*offsets_it)[1].is_number_unsigned())
      bad(tensor + ": data_offsets " + offsets_it->dump() + " is not a pair of non-negative integers");
    const uint64_t begin = (*offsets_it)[0].get<uint64_t>();
    const uint64_t end = (*offsets_it)[1].get<uint64_t>();
    if (begin > end) bad(tensor + ": data_offsets " + offsets_string(begin, end) + " end before they begin");
    if (end > data_size)
      bad_as(ErrorCode::SafetensorsDataPastEnd, {{"path", origin_}, {"tensor", name}},
             tensor + ": data_offsets " + offsets_string(begin, end) + " lie outside the data (" +
                 std::to_string(data_size) + " bytes): the file is truncated or the header is wrong");
    if (end - begin != byte_count)
      bad(tensor + ": data_offsets " + offsets_string(begin, end) + " span " + std::to_string(end - begin) +
          " bytes, but " + dtype_text + " " + shape_string(shape) + " needs " + std::to_string(byte_count));

    TensorView view;
    view.name = name;
    view.dtype = *dtype;
    view.shape = std::move(shape);
    view.storage = storage_.get();
    view.offset = data_start + begin;
    spans.push_back({begin, end, tensors_.size()});
    tensors_.push_back(std::move(view));
  }

  // The spans must tile the data region: no overlap, no hole, nothing after the last tensor.
  std::sort(spans.begin(), spans.end(),
            [](const Span& a, const Span& b) { return a.begin != b.begin ? a.begin < b.begin : a.end < b.end; });
  uint64_t expected = 0;
  for (size_t i = 0; i < spans.size(); ++i) {
    const Span& s = spans[i];
    if (s.begin < expected)
      bad("tensor '" + tensors_[s.index].name + "' data_offsets " + offsets_string(s.begin, s.end) +
          " overlap tensor '" + tensors_[spans[i - 1].index].name + "' " +
          offsets_string(spans[i - 1].begin, spans[i - 1].end));
    if (s.begin > expected)
      bad("the data has a hole " + offsets_string(expected, s.begin) + " before tensor '" + tensors_[s.index].name +
          "' (the safetensors format requires tensors to cover the data contiguously)");
    expected = s.end;
  }
  if (expected != data_size)
    bad(std::to_string(data_size - expected) + " bytes after the last tensor are not described by the header");

  std::vector<TensorView> ordered;
  ordered.reserve(tensors_.size());
  for (const Span& s : spans) ordered.push_back(std::move(tensors_[s.index]));
  tensors_ = std::move(ordered);
  for (size_t i = 0; i < tensors_.size(); ++i) index_.emplace(tensors_[i].name, i);
}

// [SECTION] writer

namespace {

using Sink = std::function<void(const void*, size_t)>;

void emit_safetensors(const std::vector<TensorToWrite>& tensors, const std::map<std::string, std::string>& metadata,
                      DType storage, const char* where, const Sink& sink) {
  if (storage != DType::F32 && storage != DType::F16)
    fail(ErrorKind::Unsupported, where, std::string("cannot write dtype ") + dtype_name(storage) + " (F32 or F16 only)");
  const size_t elem = dtype_size(storage);
  json header = json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  uint64_t offset = 0;
  for (const auto& t : tensors) {
    if (t.name == "__metadata__") fail(ErrorKind::Format, where, "a tensor cannot be named '__metadata__'");
    if (header.contains(t.name)) fail(ErrorKind::Format, where, "two tensors are named '" + t.name + "'");
    int64_t numel = 1;
    for (int64_t d : t.shape) {
      if (d < 0) fail(ErrorKind::Shape, where, "tensor '" + t.name + "' has a negative dimension");
      numel *= d;
    }
    const bool int8 = !t.int8_values.empty();
    const size_t given = int8 ? t.int8_values.size() : t.values.size();
    if (int8 && !t.values.empty())
      fail(ErrorKind::Format, where, "tensor '" + t.name + "' has both float and 8-bit values");
    if (static_cast<uint64_t>(numel) != given)
      fail(ErrorKind::Format, where, "tensor '" + t.name + "' " + shape_string(t.shape) + " needs " +
                                         std::to_string(numel) + " values, got " + std::to_string(given));
    const DType dtype = int8 ? DType::I8 : t.keep_f32 ? DType::F32 : storage;
    const uint64_t bytes = static_cast<uint64_t>(numel) * (int8 ? 1 : t.keep_f32 ? 4 : elem);
    header[t.name] = {{"dtype", dtype_name(dtype)}, {"shape", t.shape}, {"data_offsets", {offset, offset + bytes}}};
    offset += bytes;
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');  // pad so the data region starts 8-byte aligned
  uint8_t length[8];
  for (int i = 0; i < 8; ++i) length[i] = static_cast<uint8_t>(static_cast<uint64_t>(text.size()) >> (8 * i));
  sink(length, 8);
  sink(text.data(), text.size());

  std::vector<uint8_t> chunk;
  for (const auto& t : tensors) {
    if (!t.int8_values.empty()) {  // two's complement bytes, as they lie in memory
      sink(t.int8_values.data(), t.int8_values.size());
      continue;
    }
    if (storage == DType::F32 || t.keep_f32) {
      // little-endian hosts only (x86-64, arm64): floats go out as they lie in memory
      if (!t.values.empty()) sink(t.values.data(), t.values.size() * 4);
      continue;
    }
    chunk.resize(t.values.size() * 2);
    for (size_t i = 0; i < t.values.size(); ++i) {
      const float x = t.values[i];
      const uint16_t h = float_to_f16(x);
      if (std::isfinite(x) && (h & 0x7c00u) == 0x7c00u)
        fail(ErrorKind::Value, where, "tensor '" + t.name + "' value " + std::to_string(x) + " at index " +
                                          std::to_string(i) + " does not fit in F16 (|x| <= 65504)");
      chunk[2 * i] = static_cast<uint8_t>(h & 0xff);
      chunk[2 * i + 1] = static_cast<uint8_t>(h >> 8);
    }
    if (!chunk.empty()) sink(chunk.data(), chunk.size());
  }
}

std::vector<std::byte> serialize(const std::vector<TensorToWrite>& tensors,
                                 const std::map<std::string, std::string>& metadata, DType storage,
                                 const char* where) {
  std::vector<std::byte> out;
  emit_safetensors(tensors, metadata, storage, where, [&](const void* p, size_t n) {
    const auto* b = static_cast<const std::byte*>(p);
    out.insert(out.end(), b, b + n);
  });
  return out;
}

}  // namespace

std::vector<std::byte> serialize_safetensors(const std::vector<TensorToWrite>& tensors,
                                             const std::map<std::string, std::string>& metadata, DType storage) {
  return serialize(tensors, metadata, storage, "serialize_safetensors");
}

void write_safetensors(const std::string& path, const std::vector<TensorToWrite>& tensors,
                       const std::map<std::string, std::string>& metadata, DType storage, const WriteRules& rules) {
  // The whole file in memory first (tens of MB for a model), then written atomically (io/user_files.h).
  const char* where = "save_safetensors";
  const std::vector<std::byte> bytes = serialize(tensors, metadata, storage, where);
  const std::string error =
      write_user_file(path, std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()), rules);
  if (!error.empty()) fail(ErrorKind::File, where, error);
}

}  // namespace sf
