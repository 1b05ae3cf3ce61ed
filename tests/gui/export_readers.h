// Readers for what the app exports, written independently of app/gui/export.cpp so that the tests check the
// files against the formats themselves: NPY version 1.0 (numpy/lib/format.py) and CSV as RFC 4180 quotes it.
#pragma once
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

namespace sf::gui::test {

inline std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

struct Npy {
  std::string error;  // empty when the file parsed
  std::string header; // the dict literal, padding included
  int rows = 0, cols = 0;
  std::vector<float> values;
};

inline Npy parse_npy(const std::string& bytes) {
  Npy npy;
  auto fail = [&](const char* why) {
    npy.error = why;
    return npy;
  };
  if (bytes.size() < 10 || bytes.compare(0, 6, "\x93NUMPY") != 0) return fail("no NPY magic");
  if (bytes[6] != 1 || bytes[7] != 0) return fail("not version 1.0");
  const size_t header_len = static_cast<unsigned char>(bytes[8]) | static_cast<unsigned char>(bytes[9]) << 8;
  if (10 + header_len > bytes.size()) return fail("header runs past the end");
  if ((10 + header_len) % 64 != 0) return fail("data not aligned to 64 bytes");
  npy.header = bytes.substr(10, header_len);
  if (npy.header.back() != '\n') return fail("header does not end with a newline");
  std::smatch m;
  if (!std::regex_search(npy.header, std::regex("'descr': *'<f4'"))) return fail("descr is not '<f4'");
  if (!std::regex_search(npy.header, std::regex("'fortran_order': *False"))) return fail("fortran_order");
  if (!std::regex_search(npy.header, m, std::regex("'shape': *\\((\\d+), *(\\d+)\\)")))
    return fail("no 2-d shape");
  npy.rows = std::stoi(m[1]);
  npy.cols = std::stoi(m[2]);
  const size_t n = static_cast<size_t>(npy.rows) * npy.cols;
  if (bytes.size() != 10 + header_len + 4 * n) return fail("data size does not match the shape");
  npy.values.resize(n);
  const unsigned char* data = reinterpret_cast<const unsigned char*>(bytes.data()) + 10 + header_len;
  for (size_t i = 0; i < n; ++i) {
    uint32_t bits = 0;  // little-endian
    for (int b = 0; b < 4; ++b) bits |= static_cast<uint32_t>(data[4 * i + b]) << (8 * b);
    std::memcpy(&npy.values[i], &bits, 4);
  }
  return npy;
}

// RFC 4180 records: fields split on commas outside quotes, "" inside quotes is one quote.
inline std::vector<std::vector<std::string>> parse_csv_records(const std::string& text) {
  std::vector<std::vector<std::string>> records(1, std::vector<std::string>(1));
  bool quoted = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (quoted) {
      if (c == '"' && i + 1 < text.size() && text[i + 1] == '"') {
        records.back().back() += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        records.back().back() += c;
      }
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      records.back().emplace_back();
    } else if (c == '\n') {
      records.emplace_back(1);
    } else {
      records.back().back() += c;
    }
  }
  if (records.back().size() == 1 && records.back()[0].empty()) records.pop_back();
  return records;
}

struct Csv {
  std::string comment;  // the first line, "# ..."
  std::vector<std::string> col_labels, row_labels;
  int rows = 0, cols = 0;
  std::vector<float> values;  // (rows, cols)
};

inline Csv parse_csv(const std::string& text) {
  Csv csv;
  const size_t eol = text.find('\n');
  csv.comment = text.substr(0, eol);
  const auto records = parse_csv_records(text.substr(eol + 1));
  if (records.empty()) return csv;
  csv.col_labels.assign(records[0].begin() + 1, records[0].end());
  csv.cols = static_cast<int>(csv.col_labels.size());
  for (size_t r = 1; r < records.size(); ++r) {
    csv.row_labels.push_back(records[r][0]);
    for (size_t c = 1; c < records[r].size(); ++c) csv.values.push_back(std::strtof(records[r][c].c_str(), nullptr));
  }
  csv.rows = static_cast<int>(csv.row_labels.size());
  return csv;
}

inline bool same_bits(float a, float b) { return std::memcmp(&a, &b, sizeof(float)) == 0 || (a != a && b != b); }

}  // namespace sf::gui::test
