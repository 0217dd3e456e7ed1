// Minimal leveled logging to stderr (abseil 20220623 has no absl/log).
// Thread-safe.
#ifndef METAOPT_CORE_COMMON_LOGGING_H_
#define METAOPT_CORE_COMMON_LOGGING_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace metaopt {

enum class LogSeverity { kDebug = 0, kInfo = 1, kWarning = 2, kError = 3 };
enum class LogFormat { kText, kJson };

// Messages below `severity` are dropped. Default: kInfo.
void SetMinLogSeverity(LogSeverity severity);
void SetLogFormat(LogFormat format);
bool LogEnabled(LogSeverity severity);

// Writes one line: "<UTC time> <LEVEL> <message>" (text) or a JSON object
// (json).
void Log(LogSeverity severity, std::string_view message);

// A named value of a structured log line. Keys are fixed by the code
// (snake_case); values come from requests and are escaped.
struct LogField {
  std::string key;
  std::variant<std::string, int64_t, double, std::vector<int64_t>> value;
};

// Writes one line with `fields` after the message. Text: `message key=value
// ...`, a string value in double quotes (JSON escapes) when it is empty or
// holds a space, '"', '=', '\\' or a control character, a list as
// comma-separated numbers. JSON: each field is a member of the object beside
// "time", "level" and "msg" (a list is an array; a non-finite number is null).
void Log(LogSeverity severity, std::string_view message,
         const std::vector<LogField>& fields);

inline void LogInfo(std::string_view message) {
  Log(LogSeverity::kInfo, message);
}
inline void LogWarning(std::string_view message) {
  Log(LogSeverity::kWarning, message);
}
inline void LogError(std::string_view message) {
  Log(LogSeverity::kError, message);
}

}  // namespace metaopt

#endif  // METAOPT_CORE_COMMON_LOGGING_H_
