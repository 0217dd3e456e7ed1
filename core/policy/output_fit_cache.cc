#include "core/policy/output_fit_cache.h"

#include <utility>

#include "absl/hash/hash.h"
#include "absl/strings/string_view.h"

namespace metaopt::policy {
namespace {

absl::string_view Bytes(const double* data, Eigen::Index size) {
  return absl::string_view(reinterpret_cast<const char*>(data),
                           static_cast<size_t>(size) * sizeof(double));
}

uint64_t HashOf(const OutputFitKey& key) {
  return absl::HashOf(key.kernel, key.X.rows(), key.X.cols(),
                      Bytes(key.X.data(), key.X.size()),
                      Bytes(key.y.data(), key.y.size()), key.seed,
                      key.iterations);
}

bool Equal(const OutputFitKey& a, const OutputFitKey& b) {
  return a.kernel == b.kernel && a.seed == b.seed &&
         a.iterations == b.iterations && a.X.rows() == b.X.rows() &&
         a.X.cols() == b.X.cols() && a.y.size() == b.y.size() &&
         Bytes(a.X.data(), a.X.size()) == Bytes(b.X.data(), b.X.size()) &&
         Bytes(a.y.data(), a.y.size()) == Bytes(b.y.data(), b.y.size());
}

}  // namespace

OutputFitCache& OutputFitCache::Global() {
  static OutputFitCache* cache = new OutputFitCache();
  return *cache;
}

std::optional<gp::GaussianProcess> OutputFitCache::Find(
    const OutputFitKey& key) const {
  const uint64_t hash = HashOf(key);
  MutexLock lock(&mu_);
  for (const Entry& entry : entries_) {
    if (entry.hash == hash && Equal(entry.key, key)) return entry.fitted;
  }
  return std::nullopt;
}

void OutputFitCache::Insert(OutputFitKey key, const gp::GaussianProcess& fitted) {
  const uint64_t hash = HashOf(key);
  MutexLock lock(&mu_);
  for (const Entry& entry : entries_) {
    if (entry.hash == hash && Equal(entry.key, key)) return;
  }
  entries_.push_back(Entry{hash, std::move(key), fitted});
  if (entries_.size() > kCapacity) entries_.pop_front();
}

void OutputFitCache::Clear() {
  MutexLock lock(&mu_);
  entries_.clear();
}

}  // namespace metaopt::policy
