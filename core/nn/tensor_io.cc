#include "core/nn/tensor_io.h"

#include <cmath>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace metaopt::nn {
namespace {

std::string ShapeString(const std::vector<int64_t>& shape) {
  return absl::StrCat("[", absl::StrJoin(shape, ", "), "]");
}

}  // namespace

absl::StatusOr<TensorMap> IndexTensors(
    const google::protobuf::RepeatedPtrField<v1::Tensor>& tensors) {
  TensorMap map;
  for (int i = 0; i < tensors.size(); ++i) {
    const v1::Tensor& t = tensors.Get(i);
    if (t.name().empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("tensors[", i, "]: empty name"));
    }
    if (!map.emplace(t.name(), &t).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("tensors[", i, "]: duplicate name \"", t.name(), "\""));
    }
  }
  return map;
}

v1::Tensor MakeTensor(std::string name, std::vector<int64_t> shape,
                      const Eigen::Ref<const Eigen::VectorXd>& values) {
  v1::Tensor t;
  t.set_name(std::move(name));
  for (int64_t d : shape) t.add_shape(d);
  t.mutable_values()->Reserve(static_cast<int>(values.size()));
  for (Eigen::Index i = 0; i < values.size(); ++i) t.add_values(values[i]);
  return t;
}

absl::StatusOr<Eigen::VectorXd> ReadTensor(const TensorMap& tensors,
                                           const std::string& name,
                                           const std::vector<int64_t>& shape) {
  auto it = tensors.find(name);
  if (it == tensors.end()) {
    return absl::InvalidArgumentError(
        absl::StrCat("tensor \"", name, "\": missing"));
  }
  const v1::Tensor& t = *it->second;
  const std::vector<int64_t> actual(t.shape().begin(), t.shape().end());
  if (actual != shape) {
    return absl::InvalidArgumentError(
        absl::StrCat("tensor \"", name, "\": shape ", ShapeString(actual),
                     ", expected ", ShapeString(shape)));
  }
  int64_t count = 1;
  for (int64_t d : shape) count *= d;
  if (t.values_size() != count) {
    return absl::InvalidArgumentError(absl::StrCat(
        "tensor \"", name, "\": shape ", ShapeString(shape), " has ", count,
        " elements but ", t.values_size(), " values"));
  }
  Eigen::VectorXd values(count);
  for (int64_t i = 0; i < count; ++i) {
    values[i] = t.values(static_cast<int>(i));
    if (!std::isfinite(values[i])) {
      return absl::InvalidArgumentError(
          absl::StrCat("tensor \"", name, "\": value ", i, " is not finite"));
    }
  }
  return values;
}

absl::StatusOr<int> ReadIntOption(const v1::ModelArtifact& artifact,
                                  const std::string& key, int low, int high) {
  auto it = artifact.int_options().find(key);
  if (it == artifact.int_options().end()) {
    return absl::InvalidArgumentError(
        absl::StrCat("artifact.int_options[\"", key, "\"]: missing"));
  }
  if (it->second < low || it->second > high) {
    return absl::InvalidArgumentError(
        absl::StrCat("artifact.int_options[\"", key, "\"]: ", it->second,
                     " is outside [", low, ", ", high, "]"));
  }
  return static_cast<int>(it->second);
}

}  // namespace metaopt::nn
