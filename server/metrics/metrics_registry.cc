#include "server/metrics/metrics_registry.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <set>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace metaopt::metrics {
namespace {

void AtomicAdd(std::atomic<double>& target, double amount) {
  double current = target.load(std::memory_order_relaxed);
  while (!target.compare_exchange_weak(current, current + amount,
                                       std::memory_order_relaxed)) {
  }
}

bool IsMetricName(const std::string& name) {
  if (name.empty()) return false;
  for (size_t i = 0; i < name.size(); ++i) {
    const unsigned char c = name[i];
    const bool ok = absl::ascii_isalpha(c) || c == '_' || c == ':' ||
                    (i > 0 && absl::ascii_isdigit(c));
    if (!ok) return false;
  }
  return true;
}

bool IsLabelName(const std::string& name) {
  if (name.empty()) return false;
  for (size_t i = 0; i < name.size(); ++i) {
    const unsigned char c = name[i];
    const bool ok =
        absl::ascii_isalpha(c) || c == '_' || (i > 0 && absl::ascii_isdigit(c));
    if (!ok) return false;
  }
  return true;
}

std::string EscapeHelp(std::string_view help) {
  std::string out;
  for (char c : help) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

// `{a="x",b="y"}` (empty when there are no labels), with an optional extra
// label appended (the histogram's `le`).
std::string LabelText(const std::vector<std::string>& names,
                      const LabelValues& values,
                      const std::string& extra_name = "",
                      const std::string& extra_value = "") {
  if (names.empty() && extra_name.empty()) return "";
  std::string out = "{";
  for (size_t i = 0; i < names.size(); ++i) {
    if (i > 0) out += ',';
    absl::StrAppend(&out, names[i], "=\"", EscapeLabelValue(values[i]), "\"");
  }
  if (!extra_name.empty()) {
    if (!names.empty()) out += ',';
    absl::StrAppend(&out, extra_name, "=\"", extra_value, "\"");
  }
  out += '}';
  return out;
}

const char* TypeName(FamilyBase::Type type) {
  switch (type) {
    case FamilyBase::Type::kCounter:
      return "counter";
    case FamilyBase::Type::kGauge:
      return "gauge";
    case FamilyBase::Type::kHistogram:
      return "histogram";
  }
  return "untyped";
}

void AppendChild(const std::string& name, const std::vector<std::string>& names,
                 const LabelValues& values, const Counter& counter,
                 std::string& out) {
  absl::StrAppend(&out, name, LabelText(names, values), " ",
                  FormatSampleValue(counter.value()), "\n");
}

void AppendChild(const std::string& name, const std::vector<std::string>& names,
                 const LabelValues& values, const Gauge& gauge,
                 std::string& out) {
  absl::StrAppend(&out, name, LabelText(names, values), " ",
                  FormatSampleValue(gauge.value()), "\n");
}

void AppendChild(const std::string& name, const std::vector<std::string>& names,
                 const LabelValues& values, const Histogram& histogram,
                 std::string& out) {
  const Histogram::Snapshot snapshot = histogram.snapshot();
  for (size_t i = 0; i <= snapshot.upper_bounds.size(); ++i) {
    const std::string le = i < snapshot.upper_bounds.size()
                               ? FormatSampleValue(snapshot.upper_bounds[i])
                               : "+Inf";
    absl::StrAppend(&out, name, "_bucket", LabelText(names, values, "le", le),
                    " ", snapshot.cumulative[i], "\n");
  }
  const std::string labels = LabelText(names, values);
  absl::StrAppend(&out, name, "_sum", labels, " ",
                  FormatSampleValue(snapshot.sum), "\n");
  absl::StrAppend(&out, name, "_count", labels, " ", snapshot.count, "\n");
}

// Moves `family` to the end of `families` and returns it.
template <typename T>
Family<T>* Append(std::unique_ptr<Family<T>> family,
                  std::vector<std::unique_ptr<FamilyBase>>& families) {
  Family<T>* result = family.get();
  families.push_back(std::move(family));
  return result;
}

}  // namespace

void Counter::Increment(double amount) {
  if (!(amount >= 0)) return;  // negative or NaN
  AtomicAdd(value_, amount);
}

void Gauge::Increment(double amount) { AtomicAdd(value_, amount); }

Histogram::Histogram(std::vector<double> upper_bounds)
    : upper_bounds_(std::move(upper_bounds)),
      counts_(upper_bounds_.size() + 1, 0) {}

void Histogram::Observe(double value) {
  if (std::isnan(value)) return;
  // The first bucket whose upper bound is >= value (bounds are inclusive).
  size_t bucket = 0;
  while (bucket < upper_bounds_.size() && value > upper_bounds_[bucket]) {
    ++bucket;
  }
  MutexLock lock(&mu_);
  ++counts_[bucket];
  sum_ += value;
  ++count_;
}

Histogram::Snapshot Histogram::snapshot() const {
  Snapshot snapshot;
  snapshot.upper_bounds = upper_bounds_;
  MutexLock lock(&mu_);
  uint64_t running = 0;
  for (uint64_t count : counts_) {
    running += count;
    snapshot.cumulative.push_back(running);
  }
  snapshot.sum = sum_;
  snapshot.count = count_;
  return snapshot;
}

void FamilyBase::AppendText(std::string& out) const {
  absl::StrAppend(&out, "# HELP ", name_, " ", EscapeHelp(help_), "\n");
  absl::StrAppend(&out, "# TYPE ", name_, " ", TypeName(type_), "\n");
  AppendSamples(out);
}

absl::Status FamilyBase::CheckArity(const LabelValues& values) const {
  if (values.size() == label_names_.size()) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat(name_, ": ", values.size(), " label values given for ",
                   label_names_.size(), " label names (",
                   absl::StrJoin(label_names_, ","), ")"));
}

template <typename T>
void Family<T>::AppendSamples(std::string& out) const {
  MutexLock lock(&mu_);
  for (const auto& [values, child] : children_) {
    AppendChild(name(), label_names(), values, *child, out);
  }
}

template class Family<Counter>;
template class Family<Gauge>;
template class Family<Histogram>;

absl::Status Registry::CheckNewFamily(
    const std::string& name, const std::vector<std::string>& label_names) {
  if (!IsMetricName(name)) {
    return absl::InvalidArgumentError(
        absl::StrCat("metric name \"", absl::CEscape(name),
                     "\" must match [a-zA-Z_:][a-zA-Z0-9_:]*"));
  }
  std::set<std::string> seen;
  for (const std::string& label : label_names) {
    if (!IsLabelName(label) || label.rfind("__", 0) == 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          name, ": label name \"", absl::CEscape(label),
          "\" must match [a-zA-Z_][a-zA-Z0-9_]* and not start with \"__\""));
    }
    if (!seen.insert(label).second) {
      return absl::InvalidArgumentError(
          absl::StrCat(name, ": label name \"", label, "\" appears twice"));
    }
  }
  for (const auto& family : families_) {
    if (family->name() == name) {
      return absl::AlreadyExistsError(
          absl::StrCat("metric \"", name, "\" is already registered"));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<Family<Counter>*> Registry::AddCounter(
    std::string name, std::string help, std::vector<std::string> label_names) {
  MutexLock lock(&mu_);
  if (absl::Status s = CheckNewFamily(name, label_names); !s.ok()) return s;
  return Append(
      std::make_unique<Family<Counter>>(
          std::move(name), std::move(help), FamilyBase::Type::kCounter,
          std::move(label_names), [] { return std::make_unique<Counter>(); }),
      families_);
}

absl::StatusOr<Family<Gauge>*> Registry::AddGauge(
    std::string name, std::string help, std::vector<std::string> label_names) {
  MutexLock lock(&mu_);
  if (absl::Status s = CheckNewFamily(name, label_names); !s.ok()) return s;
  return Append(
      std::make_unique<Family<Gauge>>(
          std::move(name), std::move(help), FamilyBase::Type::kGauge,
          std::move(label_names), [] { return std::make_unique<Gauge>(); }),
      families_);
}

absl::StatusOr<Family<Histogram>*> Registry::AddHistogram(
    std::string name, std::string help, std::vector<std::string> label_names,
    std::vector<double> upper_bounds) {
  MutexLock lock(&mu_);
  if (absl::Status s = CheckNewFamily(name, label_names); !s.ok()) return s;
  for (const std::string& label : label_names) {
    if (label == "le") {
      return absl::InvalidArgumentError(absl::StrCat(
          name, ": label name \"le\" is reserved for histogram buckets"));
    }
  }
  if (upper_bounds.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(name, ": a histogram needs at least one bucket bound"));
  }
  for (size_t i = 0; i < upper_bounds.size(); ++i) {
    if (!std::isfinite(upper_bounds[i])) {
      return absl::InvalidArgumentError(
          absl::StrCat(name, ": bucket bound [", i, "] ", upper_bounds[i],
                       " is not finite (+Inf is implied)"));
    }
    if (i > 0 && upper_bounds[i] <= upper_bounds[i - 1]) {
      return absl::InvalidArgumentError(absl::StrCat(
          name, ": bucket bound [", i, "] ", upper_bounds[i],
          " is not greater than bound [", i - 1, "] ", upper_bounds[i - 1]));
    }
  }
  auto family = std::make_unique<Family<Histogram>>(
      std::move(name), std::move(help), FamilyBase::Type::kHistogram,
      std::move(label_names),
      [upper_bounds] { return std::make_unique<Histogram>(upper_bounds); });
  return Append(std::move(family), families_);
}

void Registry::AddCollector(std::function<void()> collector) {
  MutexLock lock(&mu_);
  collectors_.push_back(std::move(collector));
}

std::string Registry::TextExposition() {
  MutexLock scrape(&scrape_mu_);
  std::vector<std::function<void()>> collectors;
  {
    MutexLock lock(&mu_);
    collectors = collectors_;
  }
  for (const auto& collect : collectors) collect();
  std::string out;
  MutexLock lock(&mu_);
  for (const auto& family : families_) family->AppendText(out);
  return out;
}

std::string FormatSampleValue(double value) {
  if (std::isnan(value)) return "NaN";
  if (std::isinf(value)) return value > 0 ? "+Inf" : "-Inf";
  if (value == std::floor(value) && std::fabs(value) < 9007199254740992.0) {
    return absl::StrCat(static_cast<int64_t>(value));
  }
  char buffer[32];
  for (int precision = 15; precision <= 17; ++precision) {
    std::snprintf(buffer, sizeof(buffer), "%.*g", precision, value);
    if (std::strtod(buffer, nullptr) == value) break;
  }
  return buffer;
}

std::string EscapeLabelValue(std::string_view value) {
  std::string out;
  out.reserve(value.size());
  for (char c : value) {
    switch (c) {
      case '\\':
        out += "\\\\";
        break;
      case '"':
        out += "\\\"";
        break;
      case '\n':
        out += "\\n";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::vector<double> ExponentialBuckets(double start, double factor, int count) {
  std::vector<double> bounds;
  double bound = start;
  for (int i = 0; i < count; ++i) {
    bounds.push_back(bound);
    bound *= factor;
  }
  return bounds;
}

}  // namespace metaopt::metrics
