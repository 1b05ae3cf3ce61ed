#include "util/error.h"

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

void fail(ErrorKind kind, const std::string& where, const std::string& what) {
  throw Error(kind, "[" + where + "] " + what);
}

}  // namespace sf
