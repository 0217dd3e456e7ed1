#include "core/space/encoding.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "Eigen/Core"
#include "core/space/random.h"
#include "core/space/search_space.h"
#include "metaopt/v1/study.pb.h"

namespace metaopt::space {
namespace {

// Index of the largest of `n` entries of `x` from `offset` (the first on ties;
// NaN never wins).
int ArgMax(const Eigen::VectorXd& x, int offset, int n) {
  int best = 0;
  double best_value = -std::numeric_limits<double>::infinity();
  for (int i = 0; i < n; ++i) {
    if (x[offset + i] > best_value) {
      best_value = x[offset + i];
      best = i;
    }
  }
  return best;
}

// `u` clamped to [0, 1]; NaN reads as the middle.
double ClampUnit(double u) {
  return std::isnan(u) ? 0.5 : std::clamp(u, 0.0, 1.0);
}

}  // namespace

Encoder::Encoder(const SearchSpace& space) : space_(space) {
  int offset = 0;
  const v1::SearchSpace& proto = space.proto();
  for (int s = 0; s < proto.stages_size(); ++s) {
    const v1::Stage& stage = proto.stages(s);
    StageInfo stage_info;
    stage_info.name = stage.name();
    layout_.block_start.push_back(static_cast<int>(layout_.blocks.size()));
    for (int a = 0; a < stage.algorithms_size(); ++a) {
      const v1::Algorithm& algorithm = stage.algorithms(a);
      AlgorithmInfo algorithm_info;
      algorithm_info.name = algorithm.name();
      algorithm_info.offset = offset;
      for (int p = 0; p < algorithm.parameters_size(); ++p) {
        const v1::Parameter& parameter = algorithm.parameters(p);
        ParameterInfo info;
        info.name = parameter.name();
        info.offset = offset;
        int size = 1;
        switch (parameter.domain_case()) {
          case v1::Parameter::kFloatDomain:
            info.kind = Kind::kFloat;
            info.low = parameter.float_domain().low();
            info.high = parameter.float_domain().high();
            info.log = parameter.float_domain().log();
            break;
          case v1::Parameter::kIntDomain:
            info.kind = Kind::kInt;
            info.low = static_cast<double>(parameter.int_domain().low());
            info.high = static_cast<double>(parameter.int_domain().high());
            info.log = parameter.int_domain().log();
            break;
          case v1::Parameter::kCategoricalDomain:
          case v1::Parameter::DOMAIN_NOT_SET:  // Excluded by validation.
            info.kind = Kind::kCategorical;
            info.values.assign(parameter.categorical_domain().values().begin(),
                               parameter.categorical_domain().values().end());
            for (int v = 0; v < static_cast<int>(info.values.size()); ++v) {
              info.value_index.emplace(info.values[v], v);
            }
            size = static_cast<int>(info.values.size());
            break;
        }
        layout_.parameters.push_back({s, a, p, offset, size});
        offset += size;
        algorithm_info.parameters.push_back(std::move(info));
      }
      algorithm_info.size = offset - algorithm_info.offset;
      layout_.blocks.push_back(
          {s, a, algorithm_info.offset, algorithm_info.size});
      stage_info.algorithm_index.emplace(algorithm_info.name, a);
      stage_info.algorithms.push_back(std::move(algorithm_info));
    }
    stage_info.one_hot_offset = offset;
    layout_.stages.push_back({s, offset, stage.algorithms_size()});
    offset += stage.algorithms_size();
    stage_index_.emplace(stage_info.name, s);
    stages_.push_back(std::move(stage_info));
  }
  layout_.dimension = offset;
}

double Encoder::ToUnit(const ParameterInfo& p, double x) {
  if (p.low == p.high) return 0.5;
  double u;
  if (p.log) {
    const double a = std::log10(p.low);
    u = (std::log10(x) - a) / (std::log10(p.high) - a);
  } else {
    // Halved so that bounds near +-DBL_MAX do not overflow the difference.
    u = (0.5 * x - 0.5 * p.low) / (0.5 * p.high - 0.5 * p.low);
  }
  return ClampUnit(u);
}

double Encoder::FromUnit(const ParameterInfo& p, double u) {
  u = ClampUnit(u);
  if (p.low == p.high) return p.low + 0.0;  // A domain [-0, 0] decodes to +0.
  double x;
  if (p.log) {
    const double a = std::log10(p.low);
    x = std::pow(10.0, a + u * (std::log10(p.high) - a));
  } else if (std::isfinite(p.high - p.low)) {
    x = p.low + u * (p.high - p.low);
  } else {
    x = p.low * (1 - u) + p.high * u;
  }
  if (p.kind == Kind::kInt) x = std::round(x);
  return std::clamp(x, p.low, p.high) + 0.0;  // + 0.0: no negative zero.
}

void Encoder::EncodeAssignment(const StageInfo& stage,
                               const v1::Assignment& assignment,
                               Eigen::Ref<Eigen::VectorXd> out) const {
  int a = 0;
  if (!assignment.algorithm().empty() || stage.algorithms.size() != 1) {
    auto it = stage.algorithm_index.find(assignment.algorithm());
    if (it == stage.algorithm_index.end()) return;
    a = it->second;
  }
  out[stage.one_hot_offset + a] = 1.0;
  for (const ParameterInfo& p : stage.algorithms[a].parameters) {
    auto it = assignment.parameters().find(p.name);
    if (it == assignment.parameters().end()) continue;
    const v1::ParameterValue& value = it->second;
    if (p.kind == Kind::kCategorical) {
      if (value.kind_case() != v1::ParameterValue::kCategory) continue;
      auto v = p.value_index.find(value.category());
      if (v != p.value_index.end()) out[p.offset + v->second] = 1.0;
    } else if (value.kind_case() == v1::ParameterValue::kNumber) {
      out[p.offset] = ToUnit(p, value.number());
    }
  }
}

Eigen::VectorXd Encoder::Encode(const v1::Configuration& canonical) const {
  Eigen::VectorXd out = Eigen::VectorXd::Zero(layout_.dimension);
  for (const v1::Assignment& assignment : canonical.assignments()) {
    auto it = stage_index_.find(assignment.stage());
    if (it == stage_index_.end()) continue;
    EncodeAssignment(stages_[it->second], assignment, out);
  }
  return out;
}

Eigen::MatrixXd Encoder::EncodeBatch(
    const std::vector<v1::Configuration>& canonical) const {
  Eigen::MatrixXd out(static_cast<Eigen::Index>(canonical.size()),
                      layout_.dimension);
  for (size_t i = 0; i < canonical.size(); ++i) {
    out.row(static_cast<Eigen::Index>(i)) = Encode(canonical[i]).transpose();
  }
  return out;
}

v1::Configuration Encoder::Decode(const Eigen::VectorXd& x) const {
  v1::Configuration out;
  for (const StageInfo& stage : stages_) {
    const int a = ArgMax(x, stage.one_hot_offset,
                         static_cast<int>(stage.algorithms.size()));
    const AlgorithmInfo& algorithm = stage.algorithms[a];
    v1::Assignment* assignment = out.add_assignments();
    assignment->set_stage(stage.name);
    assignment->set_algorithm(algorithm.name);
    auto& parameters = *assignment->mutable_parameters();
    for (const ParameterInfo& p : algorithm.parameters) {
      if (p.kind == Kind::kCategorical) {
        parameters[p.name].set_category(
            p.values[ArgMax(x, p.offset, static_cast<int>(p.values.size()))]);
      } else {
        parameters[p.name].set_number(FromUnit(p, x[p.offset]));
      }
    }
  }
  return out;
}

void Encoder::SampleAlgorithm(const StageInfo& stage, int a, Rng& rng,
                              v1::Assignment* assignment) const {
  const int s = stage_index_.at(stage.name);
  const v1::Algorithm& algorithm = space_.proto().stages(s).algorithms(a);
  assignment->set_stage(stage.name);
  assignment->set_algorithm(algorithm.name());
  assignment->clear_parameters();
  for (const v1::Parameter& p : algorithm.parameters()) {
    (*assignment->mutable_parameters())[p.name()] =
        SampleParameterValue(p, rng);
  }
}

v1::Configuration Encoder::Neighbor(const v1::Configuration& canonical,
                                    double step_sd, Rng& rng) const {
  // Index the input by stage; stages it lacks (it should not) are sampled
  // fresh.
  std::vector<const v1::Assignment*> given(stages_.size(), nullptr);
  for (const v1::Assignment& assignment : canonical.assignments()) {
    auto it = stage_index_.find(assignment.stage());
    if (it != stage_index_.end()) given[it->second] = &assignment;
  }

  v1::Configuration out;
  for (size_t s = 0; s < stages_.size(); ++s) {
    const StageInfo& stage = stages_[s];
    const int num_algorithms = static_cast<int>(stage.algorithms.size());
    v1::Assignment* assignment = out.add_assignments();
    int a = -1;
    if (given[s] != nullptr) {
      if (given[s]->algorithm().empty() && num_algorithms == 1) {
        a = 0;
      } else if (auto it = stage.algorithm_index.find(given[s]->algorithm());
                 it != stage.algorithm_index.end()) {
        a = it->second;
      }
    }
    if (a < 0) {
      SampleAlgorithm(stage,
                      static_cast<int>(UniformIndex(rng, num_algorithms)), rng,
                      assignment);
      continue;
    }
    if (num_algorithms > 1 && Uniform01(rng) < kSwitchAlgorithmProbability) {
      int other = static_cast<int>(UniformIndex(rng, num_algorithms - 1));
      if (other >= a) ++other;
      SampleAlgorithm(stage, other, rng, assignment);
      continue;
    }

    const AlgorithmInfo& algorithm = stage.algorithms[a];
    assignment->set_stage(stage.name);
    assignment->set_algorithm(algorithm.name);
    auto& parameters = *assignment->mutable_parameters();
    const auto& old_parameters = given[s]->parameters();
    for (const ParameterInfo& p : algorithm.parameters) {
      auto it = old_parameters.find(p.name);
      v1::ParameterValue& value = parameters[p.name];
      if (p.kind == Kind::kCategorical) {
        const int n = static_cast<int>(p.values.size());
        auto v = it == old_parameters.end()
                     ? p.value_index.end()
                     : p.value_index.find(it->second.category());
        int k = v == p.value_index.end()
                    ? static_cast<int>(UniformIndex(rng, n))
                    : v->second;
        if (n > 1 && Uniform01(rng) < kFlipCategoryProbability) {
          int other = static_cast<int>(UniformIndex(rng, n - 1));
          if (other >= k) ++other;
          k = other;
        }
        value.set_category(p.values[k]);
      } else {
        const bool valid =
            it != old_parameters.end() &&
            it->second.kind_case() == v1::ParameterValue::kNumber &&
            std::isfinite(it->second.number());
        double x = valid ? it->second.number() : FromUnit(p, Uniform01(rng));
        if (step_sd > 0) {
          x = FromUnit(p, ToUnit(p, x) + step_sd * StandardNormal(rng));
        } else {  // No step: keep the value exactly (made canonical).
          if (p.kind == Kind::kInt) x = std::round(x);
          x = std::clamp(x, p.low, p.high) + 0.0;
        }
        value.set_number(x);
      }
    }
  }
  return out;
}

}  // namespace metaopt::space
