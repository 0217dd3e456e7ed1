// Named dense tensors (v1::Tensor, row-major) in and out of Eigen, with shape
// validation, for network parameters stored in model artifacts.
#ifndef METAOPT_CORE_NN_TENSOR_IO_H_
#define METAOPT_CORE_NN_TENSOR_IO_H_

#include <cstdint>
#include <string>
#include <vector>

#include "Eigen/Core"
#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "google/protobuf/repeated_ptr_field.h"
#include "metaopt/v1/model.pb.h"

namespace metaopt::nn {

// Tensors by name (pointers into the indexed container, which must outlive
// the map).
using TensorMap = absl::flat_hash_map<std::string, const v1::Tensor*>;

// Indexes `tensors` by name. INVALID_ARGUMENT for an empty or duplicate name.
absl::StatusOr<TensorMap> IndexTensors(
    const google::protobuf::RepeatedPtrField<v1::Tensor>& tensors);

// A tensor of the given shape whose values are `values` in row-major order.
v1::Tensor MakeTensor(std::string name, std::vector<int64_t> shape,
                      const Eigen::Ref<const Eigen::VectorXd>& values);

// The values of tensor `name`, which must exist, have exactly `shape`, as many
// values as the shape's product, and finite values; otherwise
// INVALID_ARGUMENT naming the tensor, e.g. `tensor "agg.layer0.weight": shape
// [3, 4], expected [5, 4]`.
absl::StatusOr<Eigen::VectorXd> ReadTensor(const TensorMap& tensors,
                                           const std::string& name,
                                           const std::vector<int64_t>& shape);

// artifact.int_options[key] as an int in [low, high]; INVALID_ARGUMENT naming
// the option when it is missing or out of range.
absl::StatusOr<int> ReadIntOption(const v1::ModelArtifact& artifact,
                                  const std::string& key, int low, int high);

}  // namespace metaopt::nn

#endif  // METAOPT_CORE_NN_TENSOR_IO_H_
