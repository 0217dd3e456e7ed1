// Conversions between abseil time types and protobuf's well-known types.
#ifndef METAOPT_CORE_COMMON_PROTO_TIME_H_
#define METAOPT_CORE_COMMON_PROTO_TIME_H_

#include "absl/time/time.h"
#include "google/protobuf/duration.pb.h"
#include "google/protobuf/timestamp.pb.h"
#include "google/protobuf/util/time_util.h"

namespace metaopt {

// Microsecond precision (what the service stores and reports).
inline google::protobuf::Timestamp ToProtoTimestamp(absl::Time time) {
  return google::protobuf::util::TimeUtil::MicrosecondsToTimestamp(
      absl::ToUnixMicros(time));
}

inline google::protobuf::Duration ToProtoDuration(absl::Duration duration) {
  return google::protobuf::util::TimeUtil::NanosecondsToDuration(
      absl::ToInt64Nanoseconds(duration));
}

}  // namespace metaopt

#endif  // METAOPT_CORE_COMMON_PROTO_TIME_H_
