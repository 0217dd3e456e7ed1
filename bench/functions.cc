// The synthetic test functions of metaopt-bench --functions (functions.h).
#include "bench/functions.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <utility>

#include "absl/strings/str_cat.h"
#include "bench/bench_lib.h"
#include "core/common/status_macros.h"
#include "core/space/random.h"
#include "core/space/search_space.h"

namespace metaopt::bench {
namespace {

constexpr double kPi = 3.14159265358979323846;

// ---------------------------------------------------------------------------
// Spaces and points.

// A space of one stage "f" with one algorithm "f", to which the builders
// below add parameters.
v1::Algorithm* NewSpace(v1::SearchSpace& space) {
  v1::Stage* stage = space.add_stages();
  stage->set_name("f");
  v1::Algorithm* algorithm = stage->add_algorithms();
  algorithm->set_name("f");
  return algorithm;
}

void AddFloat(v1::Algorithm* algorithm, const std::string& name, double low,
              double high, bool log = false) {
  v1::Parameter* p = algorithm->add_parameters();
  p->set_name(name);
  p->mutable_float_domain()->set_low(low);
  p->mutable_float_domain()->set_high(high);
  p->mutable_float_domain()->set_log(log);
}

void AddInt(v1::Algorithm* algorithm, const std::string& name, int64_t low,
            int64_t high) {
  v1::Parameter* p = algorithm->add_parameters();
  p->set_name(name);
  p->mutable_int_domain()->set_low(low);
  p->mutable_int_domain()->set_high(high);
}

void AddCategorical(v1::Algorithm* algorithm, const std::string& name,
                    const std::vector<std::string>& values) {
  v1::Parameter* p = algorithm->add_parameters();
  p->set_name(name);
  for (const std::string& v : values) {
    p->mutable_categorical_domain()->add_values(v);
  }
}

// Floats x0 .. x{d-1} on [low, high].
v1::SearchSpace BoxSpace(int d, double low, double high) {
  v1::SearchSpace space;
  v1::Algorithm* algorithm = NewSpace(space);
  for (int i = 0; i < d; ++i)
    AddFloat(algorithm, absl::StrCat("x", i), low, high);
  return space;
}

// A canonical configuration of a space built above: parameters in order.
struct Value {
  std::string name;
  v1::ParameterValue value;
};
v1::Configuration Point(const std::vector<Value>& values) {
  v1::Configuration config;
  v1::Assignment* a = config.add_assignments();
  a->set_stage("f");
  a->set_algorithm("f");
  for (const Value& v : values) (*a->mutable_parameters())[v.name] = v.value;
  return config;
}
Value Number(const std::string& name, double x) {
  v1::ParameterValue v;
  v.set_number(x);
  return {name, v};
}
Value Category(const std::string& name, const std::string& c) {
  v1::ParameterValue v;
  v.set_category(c);
  return {name, v};
}
v1::Configuration BoxPoint(const std::vector<double>& x) {
  std::vector<Value> values;
  for (size_t i = 0; i < x.size(); ++i) {
    values.push_back(Number(absl::StrCat("x", i), x[i]));
  }
  return Point(values);
}

// Parameter `name` of a canonical configuration (number 0 / empty category
// when absent: the bench only evaluates canonical points of the space).
double NumberOf(const v1::Configuration& c, const std::string& name) {
  const auto& params = c.assignments(0).parameters();
  const auto it = params.find(name);
  return it == params.end() ? 0.0 : it->second.number();
}
std::string CategoryOf(const v1::Configuration& c, const std::string& name) {
  const auto& params = c.assignments(0).parameters();
  const auto it = params.find(name);
  return it == params.end() ? std::string() : it->second.category();
}
std::vector<double> BoxCoordinates(const v1::Configuration& c, int d) {
  std::vector<double> x(d);
  for (int i = 0; i < d; ++i) x[i] = NumberOf(c, absl::StrCat("x", i));
  return x;
}

// ---------------------------------------------------------------------------
// The functions on plain vectors.

// Branin (Dixon and Szego) on x0 in [-5, 10], x1 in [0, 15]; minimum
// 0.397887 at (-pi, 12.275), (pi, 2.275) and (3 pi, 2.475).
double Branin(double x0, double x1) {
  const double b = 5.1 / (4 * kPi * kPi);
  const double c = 5 / kPi;
  const double t = 1 / (8 * kPi);
  const double u = x1 - b * x0 * x0 + c * x0 - 6;
  return u * u + 10 * (1 - t) * std::cos(x0) + 10;
}

// Hartmann 3-D and 6-D (Dixon and Szego) on [0, 1]^d: minus a sum of four
// Gaussian bumps.
constexpr std::array<double, 4> kHartmannAlpha = {1.0, 1.2, 3.0, 3.2};
constexpr double kHartmann3A[4][3] = {
    {3, 10, 30}, {0.1, 10, 35}, {3, 10, 30}, {0.1, 10, 35}};
constexpr double kHartmann3P[4][3] = {{0.3689, 0.1170, 0.2673},
                                      {0.4699, 0.4387, 0.7470},
                                      {0.1091, 0.8732, 0.5547},
                                      {0.0381, 0.5743, 0.8828}};
constexpr double kHartmann6A[4][6] = {{10, 3, 17, 3.5, 1.7, 8},
                                      {0.05, 10, 17, 0.1, 8, 14},
                                      {3, 3.5, 1.7, 10, 17, 8},
                                      {17, 8, 0.05, 10, 0.1, 14}};
constexpr double kHartmann6P[4][6] = {
    {0.1312, 0.1696, 0.5569, 0.0124, 0.8283, 0.5886},
    {0.2329, 0.4135, 0.8307, 0.3736, 0.1004, 0.9991},
    {0.2348, 0.1451, 0.3522, 0.2883, 0.3047, 0.6650},
    {0.4047, 0.8828, 0.8732, 0.5743, 0.1091, 0.0381}};
// The minimisers (Surjanovic and Bingham's digits).
const std::vector<double> kHartmann3Min = {0.114614, 0.555649, 0.852547};
const std::vector<double> kHartmann6Min = {0.20169,  0.150011, 0.476874,
                                           0.275332, 0.311652, 0.6573};

template <int D>
double Hartmann(const std::vector<double>& x, const double (&a)[4][D],
                const double (&p)[4][D]) {
  double total = 0;
  for (int i = 0; i < 4; ++i) {
    double inner = 0;
    for (int j = 0; j < D; ++j) {
      const double d = x[j] - p[i][j];
      inner += a[i][j] * d * d;
    }
    total += kHartmannAlpha[i] * std::exp(-inner);
  }
  return -total;
}

// Ackley (a = 20, b = 0.2, c = 2 pi) on [-32.768, 32.768]^d; 0 at the origin.
double Ackley(const std::vector<double>& x) {
  const double d = static_cast<double>(x.size());
  double squares = 0, cosines = 0;
  for (double v : x) {
    squares += v * v;
    cosines += std::cos(2 * kPi * v);
  }
  return -20 * std::exp(-0.2 * std::sqrt(squares / d)) - std::exp(cosines / d) +
         20 + std::exp(1.0);
}

// Levy on [-10, 10]^d; 0 at (1, ..., 1).
double Levy(const std::vector<double>& x) {
  const size_t d = x.size();
  std::vector<double> w(d);
  for (size_t i = 0; i < d; ++i) w[i] = 1 + (x[i] - 1) / 4;
  const double s0 = std::sin(kPi * w[0]);
  double total = s0 * s0;
  for (size_t i = 0; i + 1 < d; ++i) {
    const double s = std::sin(kPi * w[i] + 1);
    total += (w[i] - 1) * (w[i] - 1) * (1 + 10 * s * s);
  }
  const double s = std::sin(2 * kPi * w[d - 1]);
  total += (w[d - 1] - 1) * (w[d - 1] - 1) * (1 + s * s);
  return total;
}

// Styblinski-Tang on [-5, 5]^d; -39.16617 d at x_i = the root of
// 4x^3 - 32x + 5 near -2.9035.
constexpr double kStyblinskiTangMin = -2.903534027771177;
double StyblinskiTang(const std::vector<double>& x) {
  double total = 0;
  for (double v : x) total += v * v * v * v - 16 * v * v + 5 * v;
  return total / 2;
}

// Rosenbrock on [-5, 10]^d; 0 at (1, ..., 1).
double Rosenbrock(const std::vector<double>& x) {
  double total = 0;
  for (size_t i = 0; i + 1 < x.size(); ++i) {
    const double u = x[i + 1] - x[i] * x[i];
    total += 100 * u * u + (x[i] - 1) * (x[i] - 1);
  }
  return total;
}

// sum_d sin(7 x_d) + x_d^2 on [0, 1]^d (suggest_benchmark's continuous4 and
// tools/loadgen/continuous_vs_tpe.py); each coordinate's minimum is at the
// root of 7 cos(7x) + 2x = 0 near 0.6467.
constexpr double kSinMin = 0.6466519525038161;
double Sin7(const std::vector<double>& x) {
  double total = 0;
  for (double v : x) total += std::sin(7 * v) + v * v;
  return total;
}

// hartmann6_mixed: Hartmann 6-D where five coordinates are floats x0..x4 on
// [0, 1], shifted by the categorical `shift` (a: 0, b: +0.2, c: -0.15: the
// optimum moves with it), the sixth is the integer k in [0, 10] scaled by
// 0.6573 / 6 (k = 6 hits the optimum's coordinate), and the shifts a and c
// add 0.2 and 0.4: the minimum -3.32237 is at shift b, k = 6,
// x = Hartmann6's minimiser + 0.2.
const std::vector<std::string> kShifts = {"a", "b", "c"};
constexpr std::array<double, 3> kShiftOffsets = {0.0, 0.2, -0.15};
constexpr std::array<double, 3> kShiftPenalties = {0.2, 0.0, 0.4};
constexpr double kKScale = 0.6573 / 6;

double Hartmann6Mixed(const v1::Configuration& c) {
  const std::string shift = CategoryOf(c, "shift");
  const size_t s =
      std::find(kShifts.begin(), kShifts.end(), shift) - kShifts.begin();
  if (s >= kShifts.size()) return std::nan("");
  std::vector<double> z(6);
  for (int i = 0; i < 5; ++i) {
    z[i] = NumberOf(c, absl::StrCat("x", i)) - kShiftOffsets[s];
  }
  z[5] = NumberOf(c, "k") * kKScale;
  return Hartmann(z, kHartmann6A, kHartmann6P) + kShiftPenalties[s];
}

// branin_logmixed: Branin whose first coordinate is a log-scale float lr on
// [1e-4, 1] (x0 = -5 + 15 (log10 lr + 4) / 4), the second a float x1 on
// [0, 15], times 1 + 0.25 abs(layers - 3) for the integer layers in [1, 8],
// plus 0.5 / 0 / 0.25 for the categorical optimizer sgd / adam / rmsprop:
// the minimum 0.397887 at layers = 3, adam and Branin's three minimisers.
const std::vector<std::string> kOptimizers = {"sgd", "adam", "rmsprop"};
constexpr std::array<double, 3> kOptimizerPenalties = {0.5, 0.0, 0.25};

double LrToX0(double lr) { return -5 + 15 * (std::log10(lr) + 4) / 4; }
double X0ToLr(double x0) { return std::pow(10.0, 4 * (x0 + 5) / 15 - 4); }

double BraninLogMixed(const v1::Configuration& c) {
  const std::string optimizer = CategoryOf(c, "optimizer");
  const size_t o =
      std::find(kOptimizers.begin(), kOptimizers.end(), optimizer) -
      kOptimizers.begin();
  if (o >= kOptimizers.size()) return std::nan("");
  const double layers = NumberOf(c, "layers");
  return Branin(LrToX0(NumberOf(c, "lr")), NumberOf(c, "x1")) *
             (1 + 0.25 * std::abs(layers - 3)) +
         kOptimizerPenalties[o];
}

// ---------------------------------------------------------------------------
// The table.

TestFunction Box(std::string name, std::string description, int d, double low,
                 double high, double (*f)(const std::vector<double>&),
                 std::vector<std::vector<double>> minimisers) {
  TestFunction out;
  out.name = std::move(name);
  out.description = std::move(description);
  out.space = BoxSpace(d, low, high);
  out.evaluate = [f, d](const v1::Configuration& c) {
    return f(BoxCoordinates(c, d));
  };
  for (const std::vector<double>& x : minimisers) {
    out.minimisers.push_back(BoxPoint(x));
  }
  out.dimensions = d;
  return out;
}

std::vector<TestFunction> MakeFunctions() {
  std::vector<TestFunction> out;
  {
    TestFunction f;
    f.name = "branin";
    f.description =
        "Branin (Dixon and Szego), x0 in [-5, 10], x1 in [0, 15]; f* = "
        "0.397887 at three points";
    v1::Algorithm* a = NewSpace(f.space);
    AddFloat(a, "x0", -5, 10);
    AddFloat(a, "x1", 0, 15);
    f.evaluate = [](const v1::Configuration& c) {
      return Branin(NumberOf(c, "x0"), NumberOf(c, "x1"));
    };
    f.minimisers = {BoxPoint({-kPi, 12.275}), BoxPoint({kPi, 2.275}),
                    BoxPoint({3 * kPi, 2.475})};
    f.dimensions = 2;
    out.push_back(std::move(f));
  }
  out.push_back(Box("hartmann3",
                    "Hartmann 3-D (Dixon and Szego) on [0, 1]^3; f* = -3.86278",
                    3, 0, 1,
                    [](const std::vector<double>& x) {
                      return Hartmann(x, kHartmann3A, kHartmann3P);
                    },
                    {kHartmann3Min}));
  out.push_back(Box("hartmann6",
                    "Hartmann 6-D (Dixon and Szego) on [0, 1]^6; f* = -3.32237",
                    6, 0, 1,
                    [](const std::vector<double>& x) {
                      return Hartmann(x, kHartmann6A, kHartmann6P);
                    },
                    {kHartmann6Min}));
  out.push_back(Box("ackley4",
                    "Ackley (a = 20, b = 0.2, c = 2 pi) on [-32.768, "
                    "32.768]^4; f* = 0 at the origin",
                    4, -32.768, 32.768, Ackley, {{0, 0, 0, 0}}));
  out.push_back(Box("levy4", "Levy on [-10, 10]^4; f* = 0 at (1, 1, 1, 1)", 4,
                    -10, 10, Levy, {{1, 1, 1, 1}}));
  out.push_back(Box("styblinski_tang4",
                    "Styblinski-Tang on [-5, 5]^4; f* = -156.66466 at "
                    "x_i = -2.903534",
                    4, -5, 5, StyblinskiTang,
                    {std::vector<double>(4, kStyblinskiTangMin)}));
  out.push_back(Box("rosenbrock4",
                    "Rosenbrock on [-5, 10]^4; f* = 0 at (1, 1, 1, 1)", 4, -5,
                    10, Rosenbrock, {{1, 1, 1, 1}}));
  out.push_back(Box("sin4",
                    "sum_d sin(7 x_d) + x_d^2 on [0, 1]^4 (suggest_benchmark's "
                    "continuous4); f* = -2.258501 at x_i = 0.646652",
                    4, 0, 1, Sin7, {std::vector<double>(4, kSinMin)}));
  {
    TestFunction f;
    f.name = "hartmann6_mixed";
    f.description =
        "Hartmann 6-D over floats x0..x4 in [0, 1] shifted by a categorical "
        "shift {a: 0, b: +0.2, c: -0.15} (a and c add 0.2 and 0.4) and an "
        "integer k in [0, 10] scaled by 0.6573/6; f* = -3.32237 at shift b, "
        "k = 6";
    v1::Algorithm* a = NewSpace(f.space);
    for (int i = 0; i < 5; ++i) AddFloat(a, absl::StrCat("x", i), 0, 1);
    AddInt(a, "k", 0, 10);
    AddCategorical(a, "shift", kShifts);
    f.evaluate = Hartmann6Mixed;
    std::vector<Value> best;
    for (int i = 0; i < 5; ++i) {
      best.push_back(
          Number(absl::StrCat("x", i), kHartmann6Min[i] + kShiftOffsets[1]));
    }
    best.push_back(Number("k", 6));
    best.push_back(Category("shift", "b"));
    f.minimisers = {Point(best)};
    f.dimensions = 7;
    f.mixed = true;
    out.push_back(std::move(f));
  }
  {
    TestFunction f;
    f.name = "branin_logmixed";
    f.description =
        "Branin over a log-scale float lr in [1e-4, 1] (x0 = -5 + 15 (log10 "
        "lr + 4) / 4) and x1 in [0, 15], times 1 + 0.25 abs(layers - 3) "
        "(integer layers in [1, 8]), plus 0.5 / 0 / 0.25 for the categorical "
        "optimizer sgd / adam / rmsprop; f* = 0.397887 at layers 3, adam";
    v1::Algorithm* a = NewSpace(f.space);
    AddFloat(a, "lr", 1e-4, 1, /*log=*/true);
    AddFloat(a, "x1", 0, 15);
    AddInt(a, "layers", 1, 8);
    AddCategorical(a, "optimizer", kOptimizers);
    f.evaluate = BraninLogMixed;
    for (const auto& [x0, x1] : std::vector<std::pair<double, double>>{
             {-kPi, 12.275}, {kPi, 2.275}, {3 * kPi, 2.475}}) {
      f.minimisers.push_back(
          Point({Number("lr", X0ToLr(x0)), Number("x1", x1),
                 Number("layers", 3), Category("optimizer", "adam")}));
    }
    f.dimensions = 4;
    f.mixed = true;
    out.push_back(std::move(f));
  }
  for (TestFunction& f : out) f.f_star = f.evaluate(f.minimisers.front());
  return out;
}

}  // namespace

const std::vector<TestFunction>& KnownFunctions() {
  static const std::vector<TestFunction>* const functions =
      new std::vector<TestFunction>(MakeFunctions());
  return *functions;
}

absl::StatusOr<std::vector<const TestFunction*>> ParseFunctions(
    std::string_view comma_list) {
  std::vector<std::string> known;
  for (const TestFunction& f : KnownFunctions()) known.push_back(f.name);
  METAOPT_ASSIGN_OR_RETURN(
      std::vector<size_t> indices,
      ParseNameList(comma_list, known, "--functions", "function"));
  std::vector<const TestFunction*> out;
  for (size_t i : indices) out.push_back(&KnownFunctions()[i]);
  return out;
}

double ReferenceValue(const TestFunction& function) {
  absl::StatusOr<space::SearchSpace> space =
      space::SearchSpace::Create(function.space);
  if (!space.ok()) return std::nan("");  // KnownFunctions' spaces are valid
  space::Rng rng(kReferenceSeed);
  std::vector<double> values;
  values.reserve(kReferenceSamples);
  for (int i = 0; i < kReferenceSamples; ++i) {
    values.push_back(function.evaluate(space->Sample(rng)));
  }
  const size_t mid = values.size() / 2;
  std::nth_element(values.begin(), values.begin() + mid, values.end());
  const double upper = values[mid];
  // An even count: the mean of the two middle values.
  const double lower = *std::max_element(values.begin(), values.begin() + mid);
  return (lower + upper) / 2;
}

}  // namespace metaopt::bench
