#include "core/surrogate/grosi_model.h"

#include <algorithm>
#include <limits>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/common/status_macros.h"
#include "core/nn/tensor_io.h"

namespace metaopt::surrogate {
namespace {

constexpr char kFeaturesPrefix[] = "features";
constexpr char kPhiTowerPrefix[] = "phi_tower";
constexpr char kConfigTowerPrefix[] = "config_tower";
constexpr char kPsi1Prefix[] = "psi1";
constexpr char kHeadPrefix[] = "head";
constexpr char kD2vPrefix[] = "d2v";
constexpr char kD2vMeanTensor[] = "d2v.mean";
constexpr double kDistanceEpsilon = 1e-12;
constexpr double kProbabilityClip = 1e-7;
constexpr int kMaxWidth = 4096;

// Widths halving layer by layer down to `last` (the paper's "▷" layout).
std::vector<int> Funnel(int layers, int last) {
  std::vector<int> widths;
  for (int i = layers - 1; i >= 0; --i) widths.push_back(last << i);
  return widths;
}

absl::Status ValidateArchitecture(const GrosiArchitecture& a) {
  auto in = [](int v, int lo, int hi) { return v >= lo && v <= hi; };
  if (!in(a.embedding, 1, kMaxWidth) || !in(a.feature_hidden, 0, kMaxWidth) ||
      !in(a.tower_layers, 1, 8) || !in(a.tower_width, 1, kMaxWidth) ||
      (a.tower_width << (a.tower_layers - 1)) > kMaxWidth ||
      !in(a.head_layers, 0, 8) || !in(a.head_width, 1, kMaxWidth) ||
      (a.head_layers > 0 &&
       (a.head_width << (a.head_layers - 1)) > kMaxWidth)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "GROSI architecture: need embedding in [1, ", kMaxWidth, "] (got ",
        a.embedding, "), feature_hidden in [0, ", kMaxWidth, "] (",
        a.feature_hidden, "), tower_layers in [1, 8] (", a.tower_layers,
        "), head_layers in [0, 8] (", a.head_layers,
        "), positive widths and a widest layer of at most ", kMaxWidth));
  }
  return absl::OkStatus();
}

// Euclidean distance with an epsilon inside the root (differentiable at 0).
double Distance(const Eigen::VectorXd& a, const Eigen::VectorXd& b) {
  return std::sqrt((a - b).squaredNorm() + kDistanceEpsilon);
}

// -log(p) (positive pair) or -log(1 - p) (negative pair) of p = exp(-d), and
// its derivative in d; zero derivative where p is clipped.
std::pair<double, double> IdentificationTerm(double d, bool positive) {
  const double s = std::exp(-d);
  const double p = std::clamp(s, kProbabilityClip, 1.0 - kProbabilityClip);
  const bool clipped = p != s;
  if (positive) return {-std::log(p), clipped ? 0.0 : 1.0};
  return {-std::log(1.0 - p), clipped ? 0.0 : -s / (1.0 - s)};
}

}  // namespace

GrosiModel::GrosiModel(GrosiArchitecture architecture,
                       v1::SearchSpace space_proto,
                       std::shared_ptr<const space::Encoder> encoder,
                       FeatureScaler scaler, nn::Mlp features,
                       std::optional<nn::Mlp> phi_tower, nn::Mlp psi1,
                       nn::Mlp head)
    : architecture_(architecture),
      space_proto_(std::move(space_proto)),
      encoder_(std::move(encoder)),
      scaler_(std::move(scaler)),
      features_(std::move(features)),
      phi_tower_(std::move(phi_tower)),
      psi1_(std::move(psi1)),
      head_(std::move(head)) {}

absl::StatusOr<GrosiModel> GrosiModel::Create(
    const v1::SearchSpace& space, std::vector<std::string> feature_names,
    const GrosiArchitecture& architecture, uint64_t seed) {
  METAOPT_RETURN_IF_ERROR(ValidateArchitecture(architecture));
  if (feature_names.empty() && !architecture.dataset2vec) {
    return absl::InvalidArgumentError(
        "GROSI: at least one meta-feature is needed (or a Dataset2Vec "
        "extractor)");
  }
  const int F = static_cast<int>(feature_names.size());
  space::Rng rng(seed);
  std::optional<Dataset2Vec> d2v;
  if (architecture.dataset2vec) {
    space::Rng d2v_rng(seed ^ 0x64327631ULL);  // "d2v1"
    METAOPT_ASSIGN_OR_RETURN(d2v,
                             Dataset2Vec::Create(architecture.d2v, d2v_rng));
  }
  const int input = F + (d2v.has_value() ? d2v->output() : 0);
  absl::StatusOr<FeatureScaler> scaler =
      FeatureScaler::Create(std::move(feature_names), Eigen::VectorXd::Zero(F),
                            Eigen::VectorXd::Ones(F));
  if (!scaler.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("GROSI: ", scaler.status().message()));
  }
  METAOPT_ASSIGN_OR_RETURN(space::SearchSpace parsed,
                           space::SearchSpace::Create(space));
  auto encoder = std::make_shared<const space::Encoder>(parsed);
  const GrosiArchitecture& a = architecture;
  std::vector<int> feature_widths;
  if (a.feature_hidden > 0) feature_widths.push_back(a.feature_hidden);
  feature_widths.push_back(a.embedding);
  METAOPT_ASSIGN_OR_RETURN(nn::Mlp features,
                           nn::Mlp::Create(input, feature_widths));
  const std::vector<int> psi1_widths = Funnel(a.tower_layers, a.tower_width);
  std::optional<nn::Mlp> phi_tower;
  if (!a.joint_psi1) {
    METAOPT_ASSIGN_OR_RETURN(
        phi_tower,
        nn::Mlp::Create(a.embedding, psi1_widths, /*relu_on_output=*/true));
  }
  METAOPT_ASSIGN_OR_RETURN(
      nn::Mlp psi1,
      nn::Mlp::Create(encoder->dimension() + (a.joint_psi1 ? a.embedding : 0),
                      psi1_widths, /*relu_on_output=*/true));
  std::vector<int> head_widths = Funnel(a.head_layers, a.head_width);
  head_widths.push_back(1);
  METAOPT_ASSIGN_OR_RETURN(
      nn::Mlp head,
      nn::Mlp::Create((a.joint_psi1 ? 1 : 2) * a.tower_width, head_widths));
  features.Initialize(nn::InitScheme::kAuto, rng);
  if (phi_tower.has_value()) phi_tower->Initialize(nn::InitScheme::kAuto, rng);
  psi1.Initialize(nn::InitScheme::kAuto, rng);
  head.Initialize(nn::InitScheme::kAuto, rng);
  GrosiModel model(a, space, std::move(encoder), *std::move(scaler),
                   std::move(features), std::move(phi_tower), std::move(psi1),
                   std::move(head));
  if (d2v.has_value()) {
    model.d2v_mean_ = Eigen::VectorXd::Zero(d2v->output());
    model.d2v_ = std::move(d2v);
  }
  return model;
}

int GrosiModel::input_dim() const { return features_.input_dim(); }

absl::Status GrosiModel::set_dataset2vec_mean(const Eigen::VectorXd& mean) {
  if (!d2v_.has_value() || mean.size() != d2v_->output() || !mean.allFinite()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "GROSI: the Dataset2Vec mean needs a model with an extractor and ",
        d2v_.has_value() ? d2v_->output() : 0, " finite values (got ",
        mean.size(), ")"));
  }
  d2v_mean_ = mean;
  return absl::OkStatus();
}

Eigen::VectorXd GrosiModel::Input(const Eigen::VectorXd& engineered,
                                  const RawSample* sample) const {
  Eigen::VectorXd z(input_dim());
  z.head(num_features()) = engineered;
  if (d2v_.has_value()) {
    z.tail(d2v_->output()) =
        sample != nullptr ? d2v_->Forward(*sample) : d2v_mean_;
  }
  return z;
}

absl::Status GrosiModel::SetFeatureStatistics(const Eigen::VectorXd& means,
                                              const Eigen::VectorXd& stds) {
  absl::StatusOr<FeatureScaler> scaler =
      FeatureScaler::Create(scaler_.names(), means, stds);
  if (!scaler.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("GROSI: ", scaler.status().message()));
  }
  scaler_ = *std::move(scaler);
  return absl::OkStatus();
}

Eigen::VectorXd GrosiModel::Embed(const Eigen::VectorXd& z) const {
  return features_.Forward(z.transpose()).row(0).transpose();
}

Eigen::VectorXd GrosiModel::Predict(const Eigen::VectorXd& phi,
                                    const Eigen::MatrixXd& X) const {
  return head_.Forward(Psi1(phi.transpose(), X, nullptr, nullptr)).col(0);
}

Eigen::MatrixXd GrosiModel::Psi1(const Eigen::MatrixXd& Phi,
                                 const Eigen::MatrixXd& X,
                                 nn::Mlp::Trace* psi1_trace,
                                 nn::Mlp::Trace* phi_trace) const {
  const Eigen::Index n = X.rows();
  const Eigen::Index heads = Phi.rows();
  const int w = architecture_.tower_width;
  if (!phi_tower_.has_value()) {
    Eigen::MatrixXd in(heads * n, X.cols() + Phi.cols());
    for (Eigen::Index h = 0; h < heads; ++h) {
      in.block(h * n, 0, n, X.cols()) = X;
      in.block(h * n, X.cols(), n, Phi.cols()) = Phi.row(h).replicate(n, 1);
    }
    return psi1_.Forward(in, psi1_trace);
  }
  const Eigen::MatrixXd T = phi_tower_->Forward(Phi, phi_trace);
  const Eigen::MatrixXd L = psi1_.Forward(X, psi1_trace);
  Eigen::MatrixXd out(heads * n, 2 * w);
  for (Eigen::Index h = 0; h < heads; ++h) {
    out.block(h * n, 0, n, w) = L;
    out.block(h * n, w, n, w) = T.row(h).replicate(n, 1);
  }
  return out;
}

Eigen::MatrixXd GrosiModel::Psi1Backward(
    const nn::Mlp::Trace& psi1_trace, const nn::Mlp::Trace& phi_trace,
    const Eigen::MatrixXd& d_out, int heads, Eigen::Index n,
    Eigen::Ref<Eigen::VectorXd> gradient) const {
  const int w = architecture_.tower_width;
  const int K = architecture_.embedding;
  Eigen::MatrixXd d_phi(heads, K);
  if (!phi_tower_.has_value()) {
    Eigen::MatrixXd d_in;
    psi1_.Backward(psi1_trace, d_out, gradient, &d_in);
    const Eigen::Index D = d_in.cols() - K;
    for (int h = 0; h < heads; ++h) {
      d_phi.row(h) = d_in.block(h * n, D, n, K).colwise().sum();
    }
    return d_phi;
  }
  const int np = phi_tower_->num_parameters();
  Eigen::MatrixXd d_L = Eigen::MatrixXd::Zero(n, w);
  Eigen::MatrixXd d_T(heads, w);
  for (int h = 0; h < heads; ++h) {
    d_L += d_out.block(h * n, 0, n, w);
    d_T.row(h) = d_out.block(h * n, w, n, w).colwise().sum();
  }
  psi1_.Backward(psi1_trace, d_L, gradient.segment(np, psi1_.num_parameters()),
                 nullptr);
  phi_tower_->Backward(phi_trace, d_T, gradient.segment(0, np), &d_phi);
  return d_phi;
}

GrosiLoss GrosiModel::Loss(const GrosiStepBatch& batch,
                           const GrosiLossWeights& weights) const {
  const Eigen::VectorXd* engineered[3] = {&batch.features, &batch.positive,
                                          &batch.negative};
  const RawSample* samples[3] = {batch.sample, batch.positive_sample,
                                 batch.negative_sample};
  const int F = num_features();
  Eigen::MatrixXd M(3, input_dim());
  Dataset2Vec::Trace traces[3];
  for (int v = 0; v < 3; ++v) {
    M.row(v).head(F) = engineered[v]->transpose();
    if (d2v_.has_value()) {
      const Eigen::VectorXd d = samples[v] != nullptr
                                    ? d2v_->Forward(*samples[v], &traces[v])
                                    : d2v_mean_;
      M.row(v).tail(d2v_->output()) = d.transpose();
    }
  }
  Eigen::MatrixXd d_inputs;
  GrosiLoss loss = Evaluate(M, batch.X, batch.y, weights, &d_inputs);
  if (d2v_.has_value()) {
    const int nd = d2v_->num_parameters();
    for (int v = 0; v < 3; ++v) {
      if (samples[v] == nullptr) continue;
      d2v_->Backward(traces[v],
                     d_inputs.row(v).tail(d2v_->output()).transpose(),
                     loss.gradient.tail(nd));
    }
  }
  return loss;
}

GrosiLoss GrosiModel::RegressionLoss(const Eigen::VectorXd& z,
                                     const Eigen::MatrixXd& X,
                                     const Eigen::VectorXd& y) const {
  GrosiLossWeights weights;
  weights.alpha = 0.0;
  weights.delta = 0.0;
  return Evaluate(z.transpose(), X, y, weights, nullptr);
}

GrosiLoss GrosiModel::Evaluate(const Eigen::MatrixXd& M,
                               const Eigen::MatrixXd& X,
                               const Eigen::VectorXd& y,
                               const GrosiLossWeights& weights,
                               Eigen::MatrixXd* d_inputs) const {
  const Eigen::Index n = X.rows();
  // Rows of M: z_t, then (with a pair) z_t' and z_q.
  const bool paired = M.rows() == 3;
  const int views = static_cast<int>(M.rows());
  nn::Mlp::Trace features_trace;
  const Eigen::MatrixXd Phi = features_.Forward(M, &features_trace);
  // psi at phi_t (and phi_q): towers, then the head on stacked rows.
  const int heads = paired ? 2 : 1;
  Eigen::MatrixXd tower_in(heads, Phi.cols());
  tower_in.row(0) = Phi.row(0);
  if (paired) tower_in.row(1) = Phi.row(2);
  nn::Mlp::Trace phi_trace, psi1_trace, head_trace;
  const Eigen::VectorXd out =
      head_
          .Forward(Psi1(tower_in, X, &psi1_trace, &phi_trace), &head_trace)
          .col(0);

  GrosiLoss loss;
  Eigen::VectorXd d_out = Eigen::VectorXd::Zero(heads * n);
  Eigen::MatrixXd d_phi = Eigen::MatrixXd::Zero(views, Phi.cols());
  const double inv_n = n > 0 ? 1.0 / static_cast<double>(n) : 0.0;
  const Eigen::VectorXd residual = out.head(n) - y;
  loss.regression = residual.squaredNorm() * inv_n;
  d_out.head(n) += weights.regression * 2.0 * inv_n * residual;
  if (paired) {
    const Eigen::VectorXd phi_t = Phi.row(0).transpose();
    const Eigen::VectorXd phi_p = Phi.row(1).transpose();
    const Eigen::VectorXd phi_q = Phi.row(2).transpose();
    const double d_tq = Distance(phi_t, phi_q);
    const double d_tp = Distance(phi_t, phi_p);
    // R: similarity-weighted disagreement of psi across the two datasets.
    const double similarity = std::exp(-d_tq);
    const Eigen::VectorXd gap = out.head(n) - out.tail(n);
    const double mean_gap2 = gap.squaredNorm() * inv_n;
    loss.consistency = similarity * mean_gap2;
    d_out.head(n) += weights.alpha * similarity * 2.0 * inv_n * gap;
    d_out.tail(n) -= weights.alpha * similarity * 2.0 * inv_n * gap;
    double dd_tq = -weights.alpha * similarity * mean_gap2;
    // P: binary cross-entropy of the positive and the negative pair.
    const auto [positive, d_positive] = IdentificationTerm(d_tp, true);
    const auto [negative, d_negative] = IdentificationTerm(d_tq, false);
    loss.identification = 0.5 * (positive + negative);
    const double dd_tp = weights.delta * 0.5 * d_positive;
    dd_tq += weights.delta * 0.5 * d_negative;
    const Eigen::RowVectorXd u_tq = (phi_t - phi_q).transpose() / d_tq;
    const Eigen::RowVectorXd u_tp = (phi_t - phi_p).transpose() / d_tp;
    d_phi.row(0) += dd_tq * u_tq + dd_tp * u_tp;
    d_phi.row(2) -= dd_tq * u_tq;
    d_phi.row(1) -= dd_tp * u_tp;
  }
  loss.value = weights.regression * loss.regression +
               weights.alpha * loss.consistency +
               weights.delta * loss.identification;

  // Backward: head, psi1 (and the phi tower), h; parameters in the order of
  // parameters().
  const int nf = features_.num_parameters();
  const int n1 = (phi_tower_.has_value() ? phi_tower_->num_parameters() : 0) +
                 psi1_.num_parameters();
  const int nh = head_.num_parameters();
  loss.gradient = Eigen::VectorXd::Zero(num_parameters());
  Eigen::MatrixXd d_head_in;
  head_.Backward(head_trace, d_out, loss.gradient.segment(nf + n1, nh),
                 &d_head_in);
  const Eigen::MatrixXd d_tower_in =
      Psi1Backward(psi1_trace, phi_trace, d_head_in, heads, n,
                   loss.gradient.segment(nf, n1));
  d_phi.row(0) += d_tower_in.row(0);
  if (paired) d_phi.row(2) += d_tower_in.row(1);
  features_.Backward(features_trace, d_phi, loss.gradient.segment(0, nf),
                     d_inputs);
  return loss;
}

int GrosiModel::num_parameters() const {
  int count = 0;
  for (const nn::Mlp* mlp : Networks(*this)) count += mlp->num_parameters();
  return count + (d2v_.has_value() ? d2v_->num_parameters() : 0);
}


Eigen::VectorXd GrosiModel::parameters() const {
  Eigen::VectorXd p(num_parameters());
  int offset = 0;
  for (const nn::Mlp* mlp : Networks(*this)) {
    mlp->GetParameters(p.segment(offset, mlp->num_parameters()));
    offset += mlp->num_parameters();
  }
  if (d2v_.has_value()) {
    d2v_->GetParameters(p.segment(offset, d2v_->num_parameters()));
  }
  return p;
}

absl::Status GrosiModel::set_parameters(const Eigen::VectorXd& params) {
  if (params.size() != num_parameters() || !params.allFinite()) {
    return absl::InvalidArgumentError(
        absl::StrCat("GROSI parameters: need ", num_parameters(),
                     " finite values (got ", params.size(), ")"));
  }
  int offset = 0;
  for (nn::Mlp* mlp : Networks(*this)) {
    mlp->SetParameters(params.segment(offset, mlp->num_parameters()));
    offset += mlp->num_parameters();
  }
  if (d2v_.has_value()) {
    d2v_->SetParameters(params.segment(offset, d2v_->num_parameters()));
  }
  return absl::OkStatus();
}

void GrosiModel::ToArtifact(v1::ModelArtifact* artifact) const {
  artifact->set_kind(v1::MODEL_KIND_GROSI);
  *artifact->mutable_search_space() = space_proto_;
  artifact->clear_tensors();
  std::vector<v1::Tensor> tensors;
  features_.AppendTensors(kFeaturesPrefix, &tensors);
  if (phi_tower_.has_value()) {
    phi_tower_->AppendTensors(kPhiTowerPrefix, &tensors);
    psi1_.AppendTensors(kConfigTowerPrefix, &tensors);
  } else {
    psi1_.AppendTensors(kPsi1Prefix, &tensors);
  }
  head_.AppendTensors(kHeadPrefix, &tensors);
  if (d2v_.has_value()) {
    tensors.push_back(
        nn::MakeTensor(kD2vMeanTensor, {d2v_->output()}, d2v_mean_));
  }
  for (v1::Tensor& t : tensors) *artifact->add_tensors() = std::move(t);
  if (d2v_.has_value()) d2v_->Write(kD2vPrefix, artifact);
  auto& ints = *artifact->mutable_int_options();
  ints["dataset2vec"] = d2v_.has_value() ? 1 : 0;
  ints["embedding"] = architecture_.embedding;
  ints["joint_psi1"] = architecture_.joint_psi1 ? 1 : 0;
  ints["feature_hidden"] = architecture_.feature_hidden;
  ints["tower_layers"] = architecture_.tower_layers;
  ints["tower_width"] = architecture_.tower_width;
  ints["head_layers"] = architecture_.head_layers;
  ints["head_width"] = architecture_.head_width;
  ints["feature_dim"] = num_features();
  ints["input_dim"] = encoder_->dimension();
  scaler_.WriteTo(artifact->mutable_normalization());
}

absl::StatusOr<GrosiModel> GrosiModel::FromArtifact(
    const v1::ModelArtifact& artifact) {
  if (artifact.kind() != v1::MODEL_KIND_GROSI) {
    return absl::InvalidArgumentError(
        absl::StrCat("artifact.kind: ", v1::ModelKind_Name(artifact.kind()),
                     ", expected MODEL_KIND_GROSI"));
  }
  GrosiArchitecture a;
  METAOPT_ASSIGN_OR_RETURN(
      a.embedding, nn::ReadIntOption(artifact, "embedding", 1, kMaxWidth));
  METAOPT_ASSIGN_OR_RETURN(
      a.feature_hidden,
      nn::ReadIntOption(artifact, "feature_hidden", 0, kMaxWidth));
  METAOPT_ASSIGN_OR_RETURN(a.tower_layers,
                           nn::ReadIntOption(artifact, "tower_layers", 1, 8));
  METAOPT_ASSIGN_OR_RETURN(
      a.tower_width, nn::ReadIntOption(artifact, "tower_width", 1, kMaxWidth));
  METAOPT_ASSIGN_OR_RETURN(a.head_layers,
                           nn::ReadIntOption(artifact, "head_layers", 0, 8));
  METAOPT_ASSIGN_OR_RETURN(
      a.head_width, nn::ReadIntOption(artifact, "head_width", 1, kMaxWidth));
  METAOPT_ASSIGN_OR_RETURN(FeatureScaler scaler,
                           FeatureScaler::ReadFrom(artifact.normalization()));
  // Artifacts from before the joint psi1 have two towers and no option.
  a.joint_psi1 = false;
  if (artifact.int_options().contains("joint_psi1")) {
    METAOPT_ASSIGN_OR_RETURN(const int joint,
                             nn::ReadIntOption(artifact, "joint_psi1", 0, 1));
    a.joint_psi1 = joint == 1;
  }
  // Artifacts from before the extractor have no "dataset2vec" option.
  if (artifact.int_options().contains("dataset2vec")) {
    METAOPT_ASSIGN_OR_RETURN(const int d2v,
                             nn::ReadIntOption(artifact, "dataset2vec", 0, 1));
    a.dataset2vec = d2v == 1;
  }
  METAOPT_ASSIGN_OR_RETURN(nn::TensorMap tensors,
                           nn::IndexTensors(artifact.tensors()));
  std::optional<Dataset2Vec> d2v;
  Eigen::VectorXd d2v_mean;
  if (a.dataset2vec) {
    METAOPT_ASSIGN_OR_RETURN(d2v,
                             Dataset2Vec::Read(kD2vPrefix, artifact, tensors));
    a.d2v = d2v->architecture();
    METAOPT_ASSIGN_OR_RETURN(
        d2v_mean, nn::ReadTensor(tensors, kD2vMeanTensor, {d2v->output()}));
  }
  METAOPT_ASSIGN_OR_RETURN(
      const int feature_dim,
      nn::ReadIntOption(artifact, "feature_dim", a.dataset2vec ? 0 : 1,
                        std::numeric_limits<int>::max()));
  if (feature_dim != scaler.size()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "artifact.int_options[\"feature_dim\"]: ", feature_dim, ", but ",
        scaler.size(), " features have statistics in artifact.normalization"));
  }
  METAOPT_ASSIGN_OR_RETURN(
      GrosiModel model,
      Create(artifact.search_space(), scaler.names(), a, /*seed=*/0));
  METAOPT_ASSIGN_OR_RETURN(const int input_dim,
                           nn::ReadIntOption(artifact, "input_dim", 0,
                                             std::numeric_limits<int>::max()));
  if (input_dim != model.encoder().dimension()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "artifact.int_options[\"input_dim\"]: ", input_dim,
        ", but the search space encodes to ", model.encoder().dimension()));
  }
  model.scaler_ = std::move(scaler);
  if (d2v.has_value()) {
    model.d2v_ = std::move(d2v);
    model.d2v_mean_ = std::move(d2v_mean);
  }
  METAOPT_RETURN_IF_ERROR(
      model.features_.ReadTensors(kFeaturesPrefix, tensors));
  if (model.phi_tower_.has_value()) {
    METAOPT_RETURN_IF_ERROR(
        model.phi_tower_->ReadTensors(kPhiTowerPrefix, tensors));
    METAOPT_RETURN_IF_ERROR(
        model.psi1_.ReadTensors(kConfigTowerPrefix, tensors));
  } else {
    METAOPT_RETURN_IF_ERROR(model.psi1_.ReadTensors(kPsi1Prefix, tensors));
  }
  METAOPT_RETURN_IF_ERROR(model.head_.ReadTensors(kHeadPrefix, tensors));
  return model;
}

}  // namespace metaopt::surrogate
