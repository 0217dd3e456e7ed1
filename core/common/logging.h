// Minimal leveled logging to stderr (abseil 20220623 has no absl/log).
// Thread-safe.
#ifndef METAOPT_CORE_COMMON_LOGGING_H_
#define METAOPT_CORE_COMMON_LOGGING_H_

#include <string_view>

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
