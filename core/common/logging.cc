#include "core/common/logging.h"

#include <atomic>
#include <cstdio>
#include <string>

#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace metaopt {
namespace {

std::atomic<int> min_severity{static_cast<int>(LogSeverity::kInfo)};
std::atomic<int> log_format{static_cast<int>(LogFormat::kText)};
absl::Mutex log_mutex;

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

void AppendJsonEscaped(std::string_view text, std::string& out) {
  for (char c : text) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof(buf), "\\u%04x", c);
          out += buf;
        } else {
          out += c;
        }
    }
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
  if (!LogEnabled(severity)) return;
  const std::string time = absl::FormatTime("%Y-%m-%dT%H:%M:%E3SZ", absl::Now(),
                                            absl::UTCTimeZone());
  std::string line;
  if (static_cast<LogFormat>(log_format.load()) == LogFormat::kJson) {
    line = "{\"time\":\"" + time + "\",\"level\":\"" + SeverityName(severity) +
           "\",\"msg\":\"";
    AppendJsonEscaped(message, line);
    line += "\"}\n";
  } else {
    line = time + " " + SeverityName(severity) + " ";
    line.append(message.data(), message.size());
    line += '\n';
  }
  absl::MutexLock lock(&log_mutex);
  std::fwrite(line.data(), 1, line.size(), stderr);
  std::fflush(stderr);
}

}  // namespace metaopt
