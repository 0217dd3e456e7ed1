// The strict CSV reader of the meta-dataset format (docs/meta_datasets.md):
// whole-file checks (not empty, no byte-order mark, LF line endings only, a
// final LF), then one line at a time, split on every comma without allocating,
// with errors that name the file and the line; and the format's number
// grammar for cells.
//
// Hand-written on purpose: the format has no quoting, so a comma always splits
// and a cell is taken verbatim, and the packaged CSV libraries (libcsv,
// rapidcsv, fast-cpp-csv-parser) accept quotes, CR LF, blank lines and locale
// numbers that the format rejects, without the line numbers its errors give.
#ifndef METAOPT_CORE_META_DATASET_CSV_READER_H_
#define METAOPT_CORE_META_DATASET_CSV_READER_H_

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

namespace metaopt::meta {

// One CSV file of a meta-dataset. A CsvReader owns its text; not thread-safe.
class CsvReader {
 public:
  // `label` names the file in messages (its path). Checks the file-level rules:
  // not empty, no byte-order mark, LF line endings only, last line ends with
  // LF.
  static absl::StatusOr<CsvReader> Create(std::string label, std::string text) {
    if (text.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat(label, ": the file is empty (expected a header line)"));
    }
    if (text.size() >= 3 && text.compare(0, 3, "\xEF\xBB\xBF") == 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          label,
          ":1: starts with a byte-order mark (the format is plain ASCII)"));
    }
    if (const void* cr = std::memchr(text.data(), '\r', text.size());
        cr != nullptr) {
      const size_t offset = static_cast<const char*>(cr) - text.data();
      const int64_t line =
          1 + std::count(text.begin(), text.begin() + offset, '\n');
      return absl::InvalidArgumentError(absl::StrCat(
          label, ":", line,
          ": CR character (lines must end with LF only, no CR LF)"));
    }
    if (text.back() != '\n') {
      const int64_t line = 1 + std::count(text.begin(), text.end(), '\n');
      return absl::InvalidArgumentError(absl::StrCat(
          label, ":", line, ": the last line does not end with LF"));
    }
    return CsvReader(std::move(label), std::move(text));
  }

  // Reads the next line into `fields` (views into the text); false at the end.
  // A blank line is an error.
  absl::StatusOr<bool> Next(std::vector<absl::string_view>* fields) {
    if (pos_ >= text_.size()) return false;
    ++line_;
    const char* begin = text_.data() + pos_;
    const char* end = static_cast<const char*>(
        std::memchr(begin, '\n', text_.size() - pos_));  // present
    pos_ = end - text_.data() + 1;
    if (begin == end) return Error("blank line (the format has none)");
    fields->clear();
    const char* p = begin;
    while (true) {
      const char* comma =
          static_cast<const char*>(std::memchr(p, ',', end - p));
      if (comma == nullptr) {
        fields->emplace_back(p, end - p);
        break;
      }
      fields->emplace_back(p, comma - p);
      p = comma + 1;
    }
    return true;
  }

  // Checks that a data line has as many fields as the header.
  absl::Status CheckFieldCount(const std::vector<absl::string_view>& fields,
                               size_t expected) const {
    if (fields.size() == expected) return absl::OkStatus();
    return Error(absl::StrCat("expected ", expected,
                              " fields (as in the header), found ",
                              fields.size()));
  }

  // INVALID_ARGUMENT "<label>:<line>: <message>".
  absl::Status Error(absl::string_view message) const {
    return absl::InvalidArgumentError(
        absl::StrCat(label_, ":", line_, ": ", message));
  }
  // INVALID_ARGUMENT "<label>:<line>: column "<column>": <message>".
  absl::Status ColumnError(absl::string_view column,
                           absl::string_view message) const {
    return absl::InvalidArgumentError(absl::StrCat(
        label_, ":", line_, ": column \"", column, "\": ", message));
  }

  const std::string& label() const { return label_; }
  int64_t line() const { return line_; }

 private:
  CsvReader(std::string label, std::string text)
      : label_(std::move(label)), text_(std::move(text)) {}

  std::string label_;
  std::string text_;
  size_t pos_ = 0;
  int64_t line_ = 0;
};

// Parses a finite number in the format's grammar
// (-?[0-9]+(\.[0-9]+)?([eE][+-]?[0-9]+)?, C locale); on failure returns the
// reason ("is not a number", "is not a finite double").
std::optional<absl::string_view> ParseNumber(absl::string_view s, double* out);

// Parses an integer (-?[0-9]+) that fits in int64; on failure returns the
// reason.
std::optional<absl::string_view> ParseInteger(absl::string_view s,
                                              int64_t* out);

}  // namespace metaopt::meta

#endif  // METAOPT_CORE_META_DATASET_CSV_READER_H_
