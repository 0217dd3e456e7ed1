// A small Prometheus metrics registry: counters, gauges and histograms with
// label sets, rendered in the Prometheus text exposition format 0.0.4.
//
// DESIGN.md names prometheus-cpp for metrics; Debian 12 does not package it,
// so metaopt keeps this registry (a few hundred lines, no dependencies beyond
// abseil) and serves it over HTTP with civetweb (metrics_http_server.h), the
// embeddable server prometheus-cpp itself uses.
#ifndef METAOPT_SERVER_METRICS_METRICS_REGISTRY_H_
#define METAOPT_SERVER_METRICS_METRICS_REGISTRY_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/common/mutex.h"

namespace metaopt::metrics {

// Label values, in the order of their family's label names.
using LabelValues = std::vector<std::string>;

// A monotonically increasing value. Thread-safe (lock-free).
class Counter {
 public:
  // Adds `amount`. Counters never go down: a negative or NaN amount is
  // ignored.
  void Increment(double amount = 1);
  double value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<double> value_{0};
};

// A value that goes up and down. Thread-safe (lock-free).
class Gauge {
 public:
  void Set(double value) { value_.store(value, std::memory_order_relaxed); }
  void Increment(double amount = 1);
  double value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<double> value_{0};
};

// Counts observations in cumulative buckets with fixed upper bounds, plus
// their sum and count. Thread-safe (one mutex per histogram, so a scrape sees
// buckets, sum and count that agree).
class Histogram {
 public:
  struct Snapshot {
    std::vector<double> upper_bounds;  // finite, increasing; +Inf is implied
    std::vector<uint64_t> cumulative;  // one per bound, then one for +Inf
    double sum = 0;
    uint64_t count = 0;
  };

  // `upper_bounds` must be finite and strictly increasing (the family checks).
  explicit Histogram(std::vector<double> upper_bounds);

  // Adds one observation; NaN is ignored.
  void Observe(double value);
  Snapshot snapshot() const;

 private:
  const std::vector<double> upper_bounds_;
  mutable Mutex mu_;
  std::vector<uint64_t> counts_ ABSL_GUARDED_BY(mu_);  // per bucket, not
                                                       // cumulative; last: +Inf
  double sum_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t count_ ABSL_GUARDED_BY(mu_) = 0;
};

// What every family has, whatever its metric type. Thread-safe.
class FamilyBase {
 public:
  enum class Type { kCounter, kGauge, kHistogram };

  FamilyBase(std::string name, std::string help, Type type,
             std::vector<std::string> label_names)
      : name_(std::move(name)),
        help_(std::move(help)),
        type_(type),
        label_names_(std::move(label_names)) {}
  virtual ~FamilyBase() = default;

  const std::string& name() const { return name_; }
  const std::vector<std::string>& label_names() const { return label_names_; }
  // Appends the family's HELP, TYPE and sample lines to `out`.
  void AppendText(std::string& out) const;

 protected:
  // Appends the sample lines of every child, ordered by label values.
  virtual void AppendSamples(std::string& out) const = 0;
  absl::Status CheckArity(const LabelValues& values) const;

 private:
  const std::string name_;
  const std::string help_;
  const Type type_;
  const std::vector<std::string> label_names_;
};

// The metrics of one name, one child per distinct set of label values.
// Thread-safe. Pointers to children stay valid until Clear() or the family's
// destruction.
template <typename T>
class Family final : public FamilyBase {
 public:
  using Factory = std::function<std::unique_ptr<T>()>;
  Family(std::string name, std::string help, Type type,
         std::vector<std::string> label_names, Factory factory)
      : FamilyBase(std::move(name), std::move(help), type,
                   std::move(label_names)),
        factory_(std::move(factory)) {}

  // The child with these label values, created (at zero) on first use.
  // INVALID_ARGUMENT if the number of values differs from the label names.
  absl::StatusOr<T*> WithLabels(const LabelValues& values)
      ABSL_LOCKS_EXCLUDED(mu_) {
    if (absl::Status arity = CheckArity(values); !arity.ok()) return arity;
    MutexLock lock(&mu_);
    std::unique_ptr<T>& child = children_[values];
    if (child == nullptr) child = factory_();
    return child.get();
  }

  // Drops every child (a collector that republishes a gauge's label sets
  // from scratch calls this first). Invalidates pointers from WithLabels.
  void Clear() ABSL_LOCKS_EXCLUDED(mu_) {
    MutexLock lock(&mu_);
    children_.clear();
  }

 protected:
  void AppendSamples(std::string& out) const override ABSL_LOCKS_EXCLUDED(mu_);

 private:
  const Factory factory_;
  mutable Mutex mu_;
  std::map<LabelValues, std::unique_ptr<T>> children_ ABSL_GUARDED_BY(mu_);
};

// Families of metrics and the collectors that refresh them. Thread-safe;
// families live as long as the registry.
class Registry {
 public:
  // Each Add* validates: the name matches [a-zA-Z_:][a-zA-Z0-9_:]*, label
  // names match [a-zA-Z_][a-zA-Z0-9_]* without a leading "__" and are
  // distinct, and the name is not yet registered (ALREADY_EXISTS); other
  // violations are INVALID_ARGUMENT naming the value and the rule.
  absl::StatusOr<Family<Counter>*> AddCounter(
      std::string name, std::string help, std::vector<std::string> label_names);
  absl::StatusOr<Family<Gauge>*> AddGauge(std::string name, std::string help,
                                          std::vector<std::string> label_names);
  // `upper_bounds`: non-empty, finite, strictly increasing; "le" may not be a
  // label name.
  absl::StatusOr<Family<Histogram>*> AddHistogram(
      std::string name, std::string help, std::vector<std::string> label_names,
      std::vector<double> upper_bounds);

  // `collector` runs at the start of every TextExposition() (one scrape at a
  // time) to bring gauges up to date from their sources.
  void AddCollector(std::function<void()> collector) ABSL_LOCKS_EXCLUDED(mu_);

  // Runs the collectors, then renders every family in registration order in
  // the Prometheus text format 0.0.4.
  std::string TextExposition() ABSL_LOCKS_EXCLUDED(scrape_mu_, mu_);

 private:
  absl::Status CheckNewFamily(const std::string& name,
                              const std::vector<std::string>& label_names)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  // Serializes scrapes (collectors may Clear() and refill families).
  Mutex scrape_mu_ ABSL_ACQUIRED_BEFORE(mu_);
  Mutex mu_;
  std::vector<std::unique_ptr<FamilyBase>> families_ ABSL_GUARDED_BY(mu_);
  std::vector<std::function<void()>> collectors_ ABSL_GUARDED_BY(mu_);
};

// A sample value as the text format writes it: "+Inf", "-Inf", "NaN",
// integers without a decimal point, else the shortest decimal that reads back
// to the same double.
std::string FormatSampleValue(double value);

// A label value escaped for the text format (backslash, double quote and
// line feed become \\, \" and \n).
std::string EscapeLabelValue(std::string_view value);

// Upper bounds `start`, `start * factor`, ... (`count` of them).
std::vector<double> ExponentialBuckets(double start, double factor, int count);

}  // namespace metaopt::metrics

#endif  // METAOPT_SERVER_METRICS_METRICS_REGISTRY_H_
