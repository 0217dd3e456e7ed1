#include "core/common/logging.h"

#include <atomic>
#include <cmath>
#include <cstdio>
#include <string>

#include "absl/base/attributes.h"
#include "absl/base/const_init.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "core/common/mutex.h"
#include "nlohmann/json.hpp"

namespace metaopt {
namespace {

std::atomic<int> min_severity{static_cast<int>(LogSeverity::kInfo)};
std::atomic<int> log_format{static_cast<int>(LogFormat::kText)};
ABSL_CONST_INIT Mutex log_mutex(absl::kConstInit);

const char* SeverityName(LogSeverity severity) {
  switch (severity) {
    case LogSeverity::kDebug:
      return "DEBUG";
    case LogSeverity::kInfo:
      return "INFO";
    case LogSeverity::kWarning:
      return "WARNING";
    case LogSeverity::kError:
      return "ERROR";
  }
  return "INFO";
}

// `text` as a JSON string, quotes included (nlohmann escapes it). Bytes that
// are not UTF-8 become U+FFFD, so the line stays valid JSON.
void AppendJsonString(std::string_view text, std::string& out) {
  out += nlohmann::json(std::string(text))
             .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

bool NeedsQuotes(std::string_view text) {
  if (text.empty()) return true;
  for (char c : text) {
    if (c == ' ' || c == '"' || c == '=' || c == '\\' ||
        static_cast<unsigned char>(c) < 0x20) {
      return true;
    }
  }
  return false;
}

std::string FormatLogNumber(double value) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.6g", value);
  return buf;
}

void AppendTextField(const LogField& field, std::string& out) {
  out += ' ';
  out += field.key;
  out += '=';
  if (const auto* text = std::get_if<std::string>(&field.value)) {
    if (NeedsQuotes(*text)) {
      AppendJsonString(*text, out);
    } else {
      out += *text;
    }
  } else if (const auto* integer = std::get_if<int64_t>(&field.value)) {
    out += std::to_string(*integer);
  } else if (const auto* number = std::get_if<double>(&field.value)) {
    out += FormatLogNumber(*number);
  } else {
    const auto& list = std::get<std::vector<int64_t>>(field.value);
    for (size_t i = 0; i < list.size(); ++i) {
      if (i > 0) out += ',';
      out += std::to_string(list[i]);
    }
  }
}

void AppendJsonField(const LogField& field, std::string& out) {
  out += ',';
  AppendJsonString(field.key, out);
  out += ':';
  if (const auto* text = std::get_if<std::string>(&field.value)) {
    AppendJsonString(*text, out);
  } else if (const auto* integer = std::get_if<int64_t>(&field.value)) {
    out += std::to_string(*integer);
  } else if (const auto* number = std::get_if<double>(&field.value)) {
    out += std::isfinite(*number) ? FormatLogNumber(*number) : "null";
  } else {
    const auto& list = std::get<std::vector<int64_t>>(field.value);
    out += '[';
    for (size_t i = 0; i < list.size(); ++i) {
      if (i > 0) out += ',';
      out += std::to_string(list[i]);
    }
    out += ']';
  }
}

}  // namespace

void SetMinLogSeverity(LogSeverity severity) {
  min_severity = static_cast<int>(severity);
}
void SetLogFormat(LogFormat format) { log_format = static_cast<int>(format); }
bool LogEnabled(LogSeverity severity) {
  return static_cast<int>(severity) >= min_severity;
}

void Log(LogSeverity severity, std::string_view message) {
  Log(severity, message, {});
}

void Log(LogSeverity severity, std::string_view message,
         const std::vector<LogField>& fields) {
  if (!LogEnabled(severity)) return;
  const std::string time = absl::FormatTime("%Y-%m-%dT%H:%M:%E3SZ", absl::Now(),
                                            absl::UTCTimeZone());
  std::string line;
  if (static_cast<LogFormat>(log_format.load()) == LogFormat::kJson) {
    line = "{\"time\":\"" + time + "\",\"level\":\"" + SeverityName(severity) +
           "\",\"msg\":";
    AppendJsonString(message, line);
    for (const LogField& field : fields) AppendJsonField(field, line);
    line += "}\n";
  } else {
    line = time + " " + SeverityName(severity) + " ";
    line.append(message.data(), message.size());
    for (const LogField& field : fields) AppendTextField(field, line);
    line += '\n';
  }
  MutexLock lock(&log_mutex);
  std::fwrite(line.data(), 1, line.size(), stderr);
  std::fflush(stderr);
}

}  // namespace metaopt
