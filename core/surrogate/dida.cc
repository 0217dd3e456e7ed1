#include "core/surrogate/dida.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/common/status_macros.h"

namespace metaopt::surrogate {
namespace {

constexpr int kMaxWidth = 1024;

using RowMatrix =
    Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

// The first layer's per-entry terms: row i m + k of `a` is
// A_u[0] x_ik + b_u, of `b` A_u[1] x_ik (so u's pre-activation for the pair
// (i, j) and feature k is a.row(i m + k) + b.row(j m + k)).
void PairTerms(const nn::Mlp& u, const Eigen::MatrixXd& x, RowMatrix* a,
               RowMatrix* b) {
  const Eigen::Index n = x.rows();
  const Eigen::Index m = x.cols();
  const nn::Dense& layer = u.layers()[0];
  a->resize(n * m, layer.output_dim());
  b->resize(n * m, layer.output_dim());
  for (Eigen::Index i = 0; i < n; ++i) {
    for (Eigen::Index k = 0; k < m; ++k) {
      a->row(i * m + k) =
          layer.weight().row(0) * x(i, k) + layer.bias().transpose();
      b->row(i * m + k) = layer.weight().row(1) * x(i, k);
    }
  }
}

}  // namespace

absl::StatusOr<Dida> Dida::Create(const DidaArchitecture& a, space::Rng& rng) {
  auto in = [](int v, int lo) { return v >= lo && v <= kMaxWidth; };
  if (!in(a.pair_width, 1) || !in(a.interaction, 1) ||
      !in(a.second_layer, 0) || !in(a.hidden, 1) || !in(a.output, 1)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "Dida architecture: widths (pair ", a.pair_width, ", interaction ",
        a.interaction, ", hidden ", a.hidden, ", output ", a.output,
        ") must be in [1, ", kMaxWidth, "] and the second layer's (",
        a.second_layer, ") in [0, ", kMaxWidth, "]"));
  }
  METAOPT_ASSIGN_OR_RETURN(nn::Mlp u, nn::Mlp::Create(2, {a.pair_width},
                                                      /*relu_on_output=*/true));
  METAOPT_ASSIGN_OR_RETURN(
      nn::Mlp v, nn::Mlp::Create(a.pair_width + 1, {a.interaction},
                                 /*relu_on_output=*/true));
  std::vector<int> l2_widths;
  if (a.second_layer > 0) l2_widths.push_back(a.second_layer);
  METAOPT_ASSIGN_OR_RETURN(
      nn::Mlp l2,
      nn::Mlp::Create(2 * a.interaction, l2_widths, /*relu_on_output=*/true));
  const int pooled = a.second_layer > 0 ? a.second_layer : a.interaction;
  METAOPT_ASSIGN_OR_RETURN(
      nn::Mlp head, nn::Mlp::Create(pooled, {a.hidden, a.hidden, a.output}));
  for (nn::Mlp* mlp : {&u, &v, &l2, &head}) {
    mlp->Initialize(nn::InitScheme::kAuto, rng);
  }
  return Dida(a, std::move(u), std::move(v), std::move(l2), std::move(head));
}

Eigen::VectorXd Dida::Forward(const RawSample& sample, Trace* trace) const {
  const Eigen::Index n = sample.x.rows();
  const Eigen::Index m = sample.x.cols();
  const int t = architecture_.pair_width;
  Trace local;
  Trace& tr = trace != nullptr ? *trace : local;
  tr.x = sample.x;
  RowMatrix a, b;
  PairTerms(u_, sample.x, &a, &b);
  // s_ij = (sum_k relu(A_u [x_ik; x_jk] + b_u), m c(y_i, y_j)): Eq. 5.4 sums
  // u, label contrast included, over the m features.
  Eigen::MatrixXd s(n * n, t + 1);
  Eigen::RowVectorXd sum(t);
  for (Eigen::Index i = 0; i < n; ++i) {
    for (Eigen::Index j = 0; j < n; ++j) {
      sum.setZero();
      for (Eigen::Index k = 0; k < m; ++k) {
        sum += (a.row(i * m + k) + b.row(j * m + k)).cwiseMax(0.0);
      }
      s.block(i * n + j, 0, 1, t) = sum;
      s(i * n + j, t) = static_cast<double>(m) * 0.5 *
                        (sample.y.row(i) - sample.y.row(j)).lpNorm<1>();
    }
  }
  const Eigen::MatrixXd v = v_.Forward(s, &tr.v);
  tr.h1.resize(n, v.cols());
  for (Eigen::Index i = 0; i < n; ++i) {
    tr.h1.row(i) = v.middleRows(i * n, n).colwise().mean();
  }
  Eigen::RowVectorXd pooled;
  if (l2_.num_layers() > 0) {
    const nn::Dense& layer = l2_.layers()[0];
    const Eigen::Index r = tr.h1.cols();
    const Eigen::MatrixXd p =
        (tr.h1 * layer.weight().topRows(r)).rowwise() +
        layer.bias().transpose();
    const Eigen::MatrixXd q = tr.h1 * layer.weight().bottomRows(r);
    tr.g.resize(n * n, p.cols());
    Eigen::MatrixXd h2(n, p.cols());
    for (Eigen::Index i = 0; i < n; ++i) {
      auto block = tr.g.middleRows(i * n, n);
      block = (q.rowwise() + p.row(i)).cwiseMax(0.0);
      h2.row(i) = block.colwise().mean();
    }
    pooled = h2.colwise().mean();
  } else {
    pooled = tr.h1.colwise().mean();
  }
  return head_.Forward(pooled, &tr.head).row(0).transpose();
}

void Dida::Backward(const Trace& trace, const Eigen::VectorXd& d_output,
                    Eigen::Ref<Eigen::VectorXd> grad) const {
  const int nu = u_.num_parameters();
  const int nv = v_.num_parameters();
  const int nl2 = l2_.num_parameters();
  const Eigen::Index n = trace.x.rows();
  const Eigen::Index m = trace.x.cols();
  const double inv_n = 1.0 / static_cast<double>(n);
  Eigen::MatrixXd d_pooled;
  head_.Backward(trace.head, d_output.transpose(),
                 grad.segment(nu + nv + nl2, head_.num_parameters()),
                 &d_pooled);
  // dL/dh of the last invariant layer: the row mean spreads it evenly.
  Eigen::MatrixXd d_h1;
  if (l2_.num_layers() > 0) {
    const nn::Dense& layer = l2_.layers()[0];
    const Eigen::Index r = trace.h1.cols();
    const Eigen::Index w = layer.output_dim();
    const Eigen::RowVectorXd d_h2 = d_pooled.row(0) * inv_n * inv_n;
    Eigen::MatrixXd d_p = Eigen::MatrixXd::Zero(n, w);
    Eigen::MatrixXd d_q = Eigen::MatrixXd::Zero(n, w);
    for (Eigen::Index i = 0; i < n; ++i) {
      for (Eigen::Index j = 0; j < n; ++j) {
        const auto g = trace.g.row(i * n + j);
        for (Eigen::Index c = 0; c < w; ++c) {
          if (g(c) > 0) {
            d_p(i, c) += d_h2(c);
            d_q(j, c) += d_h2(c);
          }
        }
      }
    }
    Eigen::MatrixXd d_w(2 * r, w);
    d_w.topRows(r) = trace.h1.transpose() * d_p;
    d_w.bottomRows(r) = trace.h1.transpose() * d_q;
    auto g_l2 = grad.segment(nu + nv, nl2);
    g_l2.head(2 * r * w) += Eigen::Map<const Eigen::VectorXd>(d_w.data(),
                                                             2 * r * w);
    g_l2.tail(w) += d_p.colwise().sum().transpose();
    d_h1 = d_p * layer.weight().topRows(r).transpose() +
           d_q * layer.weight().bottomRows(r).transpose();
  } else {
    d_h1 = (d_pooled * inv_n).replicate(n, 1);
  }
  Eigen::MatrixXd d_v(n * n, d_h1.cols());
  for (Eigen::Index i = 0; i < n; ++i) {
    d_v.middleRows(i * n, n) = (d_h1.row(i) * inv_n).replicate(n, 1);
  }
  Eigen::MatrixXd d_s;
  v_.Backward(trace.v, d_v, grad.segment(nu, nv), &d_s);
  // Through sum_k relu(A_u [x_ik; x_jk] + b_u).
  const int t = architecture_.pair_width;
  RowMatrix a, b;
  PairTerms(u_, trace.x, &a, &b);
  Eigen::RowVectorXd d_w0 = Eigen::RowVectorXd::Zero(t);
  Eigen::RowVectorXd d_w1 = Eigen::RowVectorXd::Zero(t);
  Eigen::RowVectorXd d_b = Eigen::RowVectorXd::Zero(t);
  Eigen::RowVectorXd d_pre(t);
  for (Eigen::Index i = 0; i < n; ++i) {
    for (Eigen::Index j = 0; j < n; ++j) {
      const auto d_sum = d_s.block(i * n + j, 0, 1, t);
      for (Eigen::Index k = 0; k < m; ++k) {
        const auto pre = a.row(i * m + k) + b.row(j * m + k);
        d_pre = (pre.array() > 0).select(d_sum, 0.0);
        d_w0 += d_pre * trace.x(i, k);
        d_w1 += d_pre * trace.x(j, k);
        d_b += d_pre;
      }
    }
  }
  // u's flat layout: W (2 x t, column-major), then b.
  auto g_u = grad.segment(0, nu);
  for (int c = 0; c < t; ++c) {
    g_u(2 * c) += d_w0(c);
    g_u(2 * c + 1) += d_w1(c);
  }
  g_u.tail(t) += d_b.transpose();
}

int Dida::num_parameters() const {
  return u_.num_parameters() + v_.num_parameters() + l2_.num_parameters() +
         head_.num_parameters();
}

void Dida::GetParameters(Eigen::Ref<Eigen::VectorXd> out) const {
  int offset = 0;
  for (const nn::Mlp* mlp : {&u_, &v_, &l2_, &head_}) {
    mlp->GetParameters(out.segment(offset, mlp->num_parameters()));
    offset += mlp->num_parameters();
  }
}

void Dida::SetParameters(const Eigen::Ref<const Eigen::VectorXd>& params) {
  int offset = 0;
  for (nn::Mlp* mlp : {&u_, &v_, &l2_, &head_}) {
    mlp->SetParameters(params.segment(offset, mlp->num_parameters()));
    offset += mlp->num_parameters();
  }
}

void Dida::Write(const std::string& prefix,
                 v1::ModelArtifact* artifact) const {
  std::vector<v1::Tensor> tensors;
  u_.AppendTensors(prefix + ".u", &tensors);
  v_.AppendTensors(prefix + ".v", &tensors);
  l2_.AppendTensors(prefix + ".l2", &tensors);
  head_.AppendTensors(prefix + ".head", &tensors);
  for (v1::Tensor& t : tensors) *artifact->add_tensors() = std::move(t);
  auto& ints = *artifact->mutable_int_options();
  const DidaArchitecture& a = architecture_;
  ints[prefix + "_pair_width"] = a.pair_width;
  ints[prefix + "_interaction"] = a.interaction;
  ints[prefix + "_second_layer"] = a.second_layer;
  ints[prefix + "_hidden"] = a.hidden;
  ints[prefix + "_output"] = a.output;
}

absl::StatusOr<Dida> Dida::Read(const std::string& prefix,
                                const v1::ModelArtifact& artifact) {
  DidaArchitecture a;
  struct Option {
    const char* key;
    int* value;
    int low;
  };
  for (const Option& o : {Option{"_pair_width", &a.pair_width, 1},
                          Option{"_interaction", &a.interaction, 1},
                          Option{"_second_layer", &a.second_layer, 0},
                          Option{"_hidden", &a.hidden, 1},
                          Option{"_output", &a.output, 1}}) {
    METAOPT_ASSIGN_OR_RETURN(
        *o.value, nn::ReadIntOption(artifact, prefix + o.key, o.low, kMaxWidth));
  }
  METAOPT_ASSIGN_OR_RETURN(nn::TensorMap tensors,
                           nn::IndexTensors(artifact.tensors()));
  space::Rng rng(0);
  METAOPT_ASSIGN_OR_RETURN(Dida dida, Create(a, rng));
  METAOPT_RETURN_IF_ERROR(dida.u_.ReadTensors(prefix + ".u", tensors));
  METAOPT_RETURN_IF_ERROR(dida.v_.ReadTensors(prefix + ".v", tensors));
  METAOPT_RETURN_IF_ERROR(dida.l2_.ReadTensors(prefix + ".l2", tensors));
  METAOPT_RETURN_IF_ERROR(dida.head_.ReadTensors(prefix + ".head", tensors));
  return dida;
}

std::map<std::string, double> DidaFeatures(const Dida& dida,
                                           const RawSample& sample) {
  return NamedMetaFeatures(kDidaPrefix, dida.Forward(sample));
}

}  // namespace metaopt::surrogate
