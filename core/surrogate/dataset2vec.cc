#include "core/surrogate/dataset2vec.h"

#include <algorithm>
#include <numeric>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/common/status_macros.h"

namespace metaopt::surrogate {
namespace {

constexpr int kMaxWidth = 1024;
constexpr int kMaxLayers = 8;

std::vector<int> Repeat(int width, int layers) {
  return std::vector<int>(static_cast<size_t>(layers), width);
}

std::vector<Eigen::Index> Choose(Eigen::Index n, Eigen::Index k,
                                 space::Rng& rng) {
  std::vector<Eigen::Index> all(static_cast<size_t>(n));
  std::iota(all.begin(), all.end(), 0);
  for (Eigen::Index i = 0; i < k; ++i) {
    const Eigen::Index j = i + static_cast<Eigen::Index>(space::UniformIndex(
                                   rng, static_cast<uint64_t>(n - i)));
    std::swap(all[i], all[j]);
  }
  all.resize(static_cast<size_t>(k));
  std::sort(all.begin(), all.end());
  return all;
}

}  // namespace

absl::StatusOr<RawSample> RawSampleFromProto(const v1::DatasetSample& sample) {
  const int m = sample.column_kinds_size();
  const int c = sample.num_targets();
  if (m < 1 || c < 1 || sample.values_size() % m != 0 ||
      sample.values_size() / m < 1 ||
      sample.targets_size() != (sample.values_size() / m) * c) {
    return absl::InvalidArgumentError(absl::StrCat(
        "dataset_sample: ", sample.values_size(), " values, ", m, " columns, ",
        sample.targets_size(), " targets and num_targets ", c,
        " do not form rows x columns and rows x num_targets matrices"));
  }
  const int n = sample.values_size() / m;
  RawSample out;
  out.x = Eigen::Map<const Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic,
                                         Eigen::RowMajor>>(
              sample.values().data(), n, m)
              .cwiseMax(-kSampleClip)
              .cwiseMin(kSampleClip);
  out.y = Eigen::Map<const Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic,
                                         Eigen::RowMajor>>(
              sample.targets().data(), n, c)
              .cwiseMax(-kSampleClip)
              .cwiseMin(kSampleClip);
  if (!out.x.allFinite() || !out.y.allFinite()) {
    return absl::InvalidArgumentError("dataset_sample: a value is not finite");
  }
  return out;
}

RawSample SubSample(const RawSample& sample, int rows, int columns,
                    space::Rng& rng) {
  const Eigen::Index n = sample.x.rows();
  const Eigen::Index m = sample.x.cols();
  const std::vector<Eigen::Index> r =
      Choose(n, std::clamp<Eigen::Index>(rows, 1, n), rng);
  const std::vector<Eigen::Index> c =
      Choose(m, std::clamp<Eigen::Index>(columns, 1, m), rng);
  return RawSample{sample.x(r, c), sample.y(r, Eigen::all)};
}

absl::StatusOr<Dataset2Vec> Dataset2Vec::Create(
    const Dataset2VecArchitecture& a, space::Rng& rng) {
  auto in = [](int v, int hi) { return v >= 1 && v <= hi; };
  if (!in(a.f_width, kMaxWidth) || !in(a.g_width, kMaxWidth) ||
      !in(a.h_width, kMaxWidth) || !in(a.output, kMaxWidth) ||
      !in(a.f_layers, kMaxLayers) || !in(a.g_layers, kMaxLayers) ||
      !in(a.h_layers, kMaxLayers)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "Dataset2Vec architecture: widths (f ", a.f_width, ", g ", a.g_width,
        ", h ", a.h_width, ", output ", a.output, ") must be in [1, ",
        kMaxWidth, "] and layer counts (f ", a.f_layers, ", g ", a.g_layers,
        ", h ", a.h_layers, ") in [1, ", kMaxLayers, "]"));
  }
  METAOPT_ASSIGN_OR_RETURN(nn::Mlp f,
                           nn::Mlp::Create(2, Repeat(a.f_width, a.f_layers),
                                           /*relu_on_output=*/true));
  METAOPT_ASSIGN_OR_RETURN(
      nn::Mlp g, nn::Mlp::Create(a.f_width, Repeat(a.g_width, a.g_layers),
                                 /*relu_on_output=*/true));
  std::vector<int> h_widths = Repeat(a.h_width, a.h_layers - 1);
  h_widths.push_back(a.output);
  METAOPT_ASSIGN_OR_RETURN(nn::Mlp h, nn::Mlp::Create(a.g_width, h_widths));
  f.Initialize(nn::InitScheme::kAuto, rng);
  g.Initialize(nn::InitScheme::kAuto, rng);
  h.Initialize(nn::InitScheme::kAuto, rng);
  return Dataset2Vec(a, std::move(f), std::move(g), std::move(h));
}

Eigen::VectorXd Dataset2Vec::Forward(const RawSample& sample,
                                     Trace* trace) const {
  const Eigen::Index n = sample.x.rows();
  const Eigen::Index m = sample.x.cols();
  const Eigen::Index c = sample.y.cols();
  // Rows of P: the n pairs of (column j, target k), block by block.
  Eigen::MatrixXd P(n * m * c, 2);
  for (Eigen::Index j = 0; j < m; ++j) {
    for (Eigen::Index k = 0; k < c; ++k) {
      const Eigen::Index block = (j * c + k) * n;
      P.block(block, 0, n, 1) = sample.x.col(j);
      P.block(block, 1, n, 1) = sample.y.col(k);
    }
  }
  Trace local;
  Trace& t = trace != nullptr ? *trace : local;
  t.n = static_cast<int>(n);
  t.pairs = static_cast<int>(m * c);
  const Eigen::MatrixXd F = f_.Forward(P, &t.f);
  Eigen::MatrixXd pooled(m * c, F.cols());
  for (Eigen::Index b = 0; b < m * c; ++b) {
    pooled.row(b) = F.middleRows(b * n, n).colwise().mean();
  }
  const Eigen::MatrixXd G = g_.Forward(pooled, &t.g);
  const Eigen::RowVectorXd mean = G.colwise().mean();
  return h_.Forward(mean, &t.h).row(0).transpose();
}

void Dataset2Vec::Backward(const Trace& trace, const Eigen::VectorXd& d_output,
                           Eigen::Ref<Eigen::VectorXd> grad) const {
  const int nf = f_.num_parameters();
  const int ng = g_.num_parameters();
  const int nh = h_.num_parameters();
  Eigen::MatrixXd d_mean;
  h_.Backward(trace.h, d_output.transpose(), grad.segment(nf + ng, nh),
              &d_mean);
  const Eigen::MatrixXd d_g =
      (d_mean / static_cast<double>(trace.pairs)).replicate(trace.pairs, 1);
  Eigen::MatrixXd d_pooled;
  g_.Backward(trace.g, d_g, grad.segment(nf, ng), &d_pooled);
  const Eigen::Index n = trace.n;
  Eigen::MatrixXd d_f(n * trace.pairs, d_pooled.cols());
  for (Eigen::Index b = 0; b < trace.pairs; ++b) {
    d_f.middleRows(b * n, n) =
        (d_pooled.row(b) / static_cast<double>(n)).replicate(n, 1);
  }
  f_.Backward(trace.f, d_f, grad.segment(0, nf), nullptr);
}

int Dataset2Vec::num_parameters() const {
  return f_.num_parameters() + g_.num_parameters() + h_.num_parameters();
}

void Dataset2Vec::GetParameters(Eigen::Ref<Eigen::VectorXd> out) const {
  int offset = 0;
  for (const nn::Mlp* mlp : {&f_, &g_, &h_}) {
    mlp->GetParameters(out.segment(offset, mlp->num_parameters()));
    offset += mlp->num_parameters();
  }
}

void Dataset2Vec::SetParameters(
    const Eigen::Ref<const Eigen::VectorXd>& params) {
  int offset = 0;
  for (nn::Mlp* mlp : {&f_, &g_, &h_}) {
    mlp->SetParameters(params.segment(offset, mlp->num_parameters()));
    offset += mlp->num_parameters();
  }
}

void Dataset2Vec::Write(const std::string& prefix,
                        v1::ModelArtifact* artifact) const {
  std::vector<v1::Tensor> tensors;
  f_.AppendTensors(prefix + ".f", &tensors);
  g_.AppendTensors(prefix + ".g", &tensors);
  h_.AppendTensors(prefix + ".h", &tensors);
  for (v1::Tensor& t : tensors) *artifact->add_tensors() = std::move(t);
  auto& ints = *artifact->mutable_int_options();
  const Dataset2VecArchitecture& a = architecture_;
  ints[prefix + "_f_width"] = a.f_width;
  ints[prefix + "_f_layers"] = a.f_layers;
  ints[prefix + "_g_width"] = a.g_width;
  ints[prefix + "_g_layers"] = a.g_layers;
  ints[prefix + "_h_width"] = a.h_width;
  ints[prefix + "_h_layers"] = a.h_layers;
  ints[prefix + "_output"] = a.output;
}

absl::StatusOr<Dataset2Vec> Dataset2Vec::Read(const std::string& prefix,
                                              const v1::ModelArtifact& artifact,
                                              const nn::TensorMap& tensors) {
  Dataset2VecArchitecture a;
  struct Option {
    const char* key;
    int* value;
    int high;
  };
  for (const Option& o : {Option{"_f_width", &a.f_width, kMaxWidth},
                          Option{"_f_layers", &a.f_layers, kMaxLayers},
                          Option{"_g_width", &a.g_width, kMaxWidth},
                          Option{"_g_layers", &a.g_layers, kMaxLayers},
                          Option{"_h_width", &a.h_width, kMaxWidth},
                          Option{"_h_layers", &a.h_layers, kMaxLayers},
                          Option{"_output", &a.output, kMaxWidth}}) {
    METAOPT_ASSIGN_OR_RETURN(
        *o.value, nn::ReadIntOption(artifact, prefix + o.key, 1, o.high));
  }
  space::Rng rng(0);
  METAOPT_ASSIGN_OR_RETURN(Dataset2Vec d2v, Create(a, rng));
  METAOPT_RETURN_IF_ERROR(d2v.f_.ReadTensors(prefix + ".f", tensors));
  METAOPT_RETURN_IF_ERROR(d2v.g_.ReadTensors(prefix + ".g", tensors));
  METAOPT_RETURN_IF_ERROR(d2v.h_.ReadTensors(prefix + ".h", tensors));
  return d2v;
}

std::map<std::string, double> NamedMetaFeatures(const std::string& prefix,
                                                const Eigen::VectorXd& f) {
  std::map<std::string, double> out;
  for (Eigen::Index k = 0; k < f.size(); ++k) {
    out[absl::StrCat(prefix, "_", k)] = f(k);
  }
  return out;
}

std::map<std::string, double> Dataset2VecFeatures(const Dataset2Vec& d2v,
                                                  const RawSample& sample) {
  return NamedMetaFeatures(kD2vSource, d2v.Forward(sample));
}

}  // namespace metaopt::surrogate
