#include "util/error.h"

#include <algorithm>
#include <cstdio>

namespace sf {

const char* error_kind_name(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::File: return "file error";
    case ErrorKind::Format: return "format error";
    case ErrorKind::Shape: return "shape error";
    case ErrorKind::Missing: return "missing";
    case ErrorKind::Value: return "value error";
    case ErrorKind::Config: return "config error";
    case ErrorKind::Input: return "input error";
    case ErrorKind::Unsupported: return "unsupported";
  }
  return "error";
}

namespace {
// Whether `values` name exactly the declared names, each once; if so, each name is pointed at the declaration
// (static storage: an error outlives the caller's strings).
bool adopt_declared_names(ErrorCode code, std::vector<ErrorValue>& values) {
  const std::span<const std::string_view> declared = error_value_names(code);
  if (values.size() != declared.size()) return false;
  for (ErrorValue& v : values) {
    const auto it = std::find(declared.begin(), declared.end(), v.name);
    if (it == declared.end()) return false;
    v.name = *it;
  }
  for (size_t i = 0; i < values.size(); ++i)
    for (size_t j = i + 1; j < values.size(); ++j)
      if (values[i].name == values[j].name) return false;
  return true;
}
}  // namespace

Error::Error(ErrorKind kind, ErrorCode code, std::vector<ErrorValue> values, const std::string& message)
    : std::runtime_error(message), kind_(kind), code_(code), values_(std::move(values)) {
  if (code_ == ErrorCode::Generic || !adopt_declared_names(code_, values_)) {
    if (code_ != ErrorCode::Generic)
      std::fprintf(stderr, "stepformer: internal: error %.*s thrown with values that are not its declared ones\n",
                   static_cast<int>(error_code_id(code_).size()), error_code_id(code_).data());
    code_ = ErrorCode::Generic;
    values_.clear();
  }
}

std::string_view Error::value(std::string_view name) const {
  for (const ErrorValue& v : values_)
    if (v.name == name) return v.value;
  return {};
}

void fail(ErrorKind kind, const std::string& where, const std::string& what) {
  throw Error(kind, "[" + where + "] " + what);
}

void fail(ErrorKind kind, ErrorCode code, const std::string& where, std::vector<ErrorValue> values,
          const std::string& what) {
  throw Error(kind, code, std::move(values), "[" + where + "] " + what);
}

}  // namespace sf
