package metaopt

import (
	"fmt"
	"math"
	"sort"

	"google.golang.org/protobuf/proto"

	pb "github.com/metaopt/metaopt/clients/go/metaoptv1"
)

func floatParameter(name string, low, high float64, log bool) *pb.Parameter {
	return &pb.Parameter{Name: name, Domain: &pb.Parameter_FloatDomain{
		FloatDomain: &pb.FloatDomain{Low: low, High: high, Log: log}}}
}

func intParameter(name string, low, high int64, log bool) *pb.Parameter {
	return &pb.Parameter{Name: name, Domain: &pb.Parameter_IntDomain{
		IntDomain: &pb.IntDomain{Low: low, High: high, Log: log}}}
}

// Float is a real parameter on [low, high].
func Float(name string, low, high float64) *pb.Parameter {
	return floatParameter(name, low, high, false)
}

// LogFloat is a real parameter on [low, high] whose values spread geometrically (low > 0).
func LogFloat(name string, low, high float64) *pb.Parameter {
	return floatParameter(name, low, high, true)
}

// Int is an integer parameter on [low, high].
func Int(name string, low, high int64) *pb.Parameter { return intParameter(name, low, high, false) }

// LogInt is an integer parameter on [low, high] whose values spread geometrically (low >= 1).
func LogInt(name string, low, high int64) *pb.Parameter { return intParameter(name, low, high, true) }

// Categorical is a parameter that takes one of values.
func Categorical(name string, values ...string) *pb.Parameter {
	return &pb.Parameter{Name: name, Domain: &pb.Parameter_CategoricalDomain{
		CategoricalDomain: &pb.CategoricalDomain{Values: values}}}
}

// Algorithm is one alternative of a pipeline stage with its parameters.
func Algorithm(name string, params ...*pb.Parameter) *pb.Algorithm {
	return &pb.Algorithm{Name: name, Parameters: params}
}

// Stage is one step of a pipeline: a configuration picks exactly one of its algorithms.
func Stage(name string, algorithms ...*pb.Algorithm) *pb.Stage {
	return &pb.Stage{Name: name, Algorithms: algorithms}
}

// Space is a pipeline search space.
func Space(stages ...*pb.Stage) *pb.SearchSpace { return &pb.SearchSpace{Stages: stages} }

// FlatSpace is plain hyperparameter optimization: one stage with one algorithm, both "model".
func FlatSpace(params ...*pb.Parameter) *pb.SearchSpace {
	return Space(Stage("model", Algorithm("model", params...)))
}

// Goal of a study's objective.
type Goal = pb.Goal

// Goals.
const (
	Minimize = pb.Goal_GOAL_MINIMIZE
	Maximize = pb.Goal_GOAL_MAXIMIZE
)

// AlgorithmKind selects a study's optimizer.
type AlgorithmKind = pb.AlgorithmKind

// Algorithms.
const (
	Random   = pb.AlgorithmKind_ALGORITHM_KIND_RANDOM
	GP       = pb.AlgorithmKind_ALGORITHM_KIND_GP
	DeepPipe = pb.AlgorithmKind_ALGORITHM_KIND_DEEPPIPE
	PMF      = pb.AlgorithmKind_ALGORITHM_KIND_PMF
	Mosaic   = pb.AlgorithmKind_ALGORITHM_KIND_MOSAIC
	GROSI    = pb.AlgorithmKind_ALGORITHM_KIND_GROSI
	FSBO     = pb.AlgorithmKind_ALGORITHM_KIND_FSBO
)

// Spec describes a study; Proto turns it into a metaopt.v1.StudySpec. The server validates it
// (bounds, names, catalogue membership) and answers INVALID_ARGUMENT naming the field.
type Spec struct {
	Space *pb.SearchSpace
	// Objective is the objective's name (default "objective").
	Objective string
	// Goal defaults to Maximize.
	Goal Goal
	// Algorithm defaults to GP.
	Algorithm AlgorithmKind
	// Model is a registry model ("name" or "name@version"); empty: the one whose space matches,
	// if any; "none": no model.
	Model string
	// InitialTrials is the number of initial-design suggestions (0: the algorithm's default).
	InitialTrials int32
	// Seed of the study's random number generator.
	Seed uint64
	// DatasetFeatures are meta-features of the dataset, for warm starts that use them.
	DatasetFeatures map[string]float64
	// EarlyStopping is the rule that stops trials early from their intermediate values (see
	// Study.Report); nil: never stop. For example
	// &pb.EarlyStoppingSpec{Rule: &pb.EarlyStoppingSpec_Asha{Asha: &pb.AshaRule{MinResource: 1}}}.
	EarlyStopping *pb.EarlyStoppingSpec
	// Objectives, instead of Objective and Goal: several objectives (2 or 3) optimized
	// together; the study looks for their Pareto front (Study.ParetoFront). Observe every
	// objective's value (ObserveMetrics, or Value(first).WithMetrics(others)).
	Objectives []Objective
	// Constraints are limits on observed metrics; a trial that violates one completes with
	// Trial.Feasible false.
	Constraints []Constraint
}

// Objective is one of a study's several objectives.
type Objective struct {
	Name string
	// Goal: Maximize or Minimize (required).
	Goal Goal
	// Reference is the objective's coordinate of the hypervolume's reference point, in the
	// objective's units; nil: the worst feasible value observed, moved a tenth of the range
	// further.
	Reference *float64
}

// ConstraintSense is which side of its bound a constrained metric must stay on.
type ConstraintSense = pb.ConstraintSense

// Constraint senses.
const (
	AtMost  = pb.ConstraintSense_CONSTRAINT_SENSE_AT_MOST
	AtLeast = pb.ConstraintSense_CONSTRAINT_SENSE_AT_LEAST
)

// Constraint is a limit on a metric every completed trial reports: Metric <= Bound (AtMost) or
// Metric >= Bound (AtLeast).
type Constraint struct {
	Metric string
	Sense  ConstraintSense
	Bound  float64
}

// Proto is the StudySpec message of s.
func (s Spec) Proto() (*pb.StudySpec, error) {
	if s.Space == nil || len(s.Space.Stages) == 0 {
		return nil, fmt.Errorf("metaopt: spec: Space: empty; build it with FlatSpace or Space")
	}
	if s.InitialTrials < 0 {
		return nil, fmt.Errorf("metaopt: spec: InitialTrials: %d must be >= 0", s.InitialTrials)
	}
	for name, value := range s.DatasetFeatures {
		if math.IsNaN(value) || math.IsInf(value, 0) {
			return nil, fmt.Errorf("metaopt: spec: DatasetFeatures[%q]: %v is not finite", name, value)
		}
	}
	objective := s.Objective
	if objective == "" {
		objective = "objective"
	}
	goal := s.Goal
	if goal == pb.Goal_GOAL_UNSPECIFIED {
		goal = Maximize
	}
	algorithm := s.Algorithm
	if algorithm == pb.AlgorithmKind_ALGORITHM_KIND_UNSPECIFIED {
		algorithm = GP
	}
	spec := &pb.StudySpec{
		SearchSpace:     s.Space,
		Objective:       &pb.Objective{Name: objective, Goal: goal},
		Algorithm:       &pb.AlgorithmSpec{Kind: algorithm, Model: s.Model, InitialTrials: s.InitialTrials},
		DatasetFeatures: s.DatasetFeatures,
		Seed:            s.Seed,
		EarlyStopping:   s.EarlyStopping,
	}
	if len(s.Objectives) > 0 {
		if s.Objective != "" || s.Goal != pb.Goal_GOAL_UNSPECIFIED {
			return nil, fmt.Errorf("metaopt: spec: give Objectives, or Objective and Goal, not both")
		}
		for i, o := range s.Objectives {
			if o.Name == "" {
				return nil, fmt.Errorf("metaopt: spec: Objectives[%d].Name: empty", i)
			}
			if o.Goal != Maximize && o.Goal != Minimize {
				return nil, fmt.Errorf("metaopt: spec: Objectives[%d].Goal: %v; set Maximize or Minimize", i, o.Goal)
			}
			objective := &pb.Objective{Name: o.Name, Goal: o.Goal}
			if o.Reference != nil {
				if math.IsNaN(*o.Reference) || math.IsInf(*o.Reference, 0) {
					return nil, fmt.Errorf("metaopt: spec: Objectives[%d].Reference: %v is not finite", i, *o.Reference)
				}
				reference := *o.Reference
				objective.Reference = &reference
			}
			spec.Objectives = append(spec.Objectives, objective)
		}
		// The server's canonical form: the first objective is also Objective; a single one is
		// Objective alone (so that creating the study again compares equal).
		spec.Objective = proto.Clone(spec.Objectives[0]).(*pb.Objective)
		if len(spec.Objectives) == 1 {
			spec.Objectives = nil
		}
	}
	for i, c := range s.Constraints {
		if c.Metric == "" {
			return nil, fmt.Errorf("metaopt: spec: Constraints[%d].Metric: empty", i)
		}
		if c.Sense != AtMost && c.Sense != AtLeast {
			return nil, fmt.Errorf("metaopt: spec: Constraints[%d].Sense: %v; set AtMost or AtLeast", i, c.Sense)
		}
		if math.IsNaN(c.Bound) || math.IsInf(c.Bound, 0) {
			return nil, fmt.Errorf("metaopt: spec: Constraints[%d].Bound: %v is not finite", i, c.Bound)
		}
		spec.Constraints = append(spec.Constraints, &pb.Constraint{Metric: c.Metric, Sense: c.Sense, Bound: c.Bound})
	}
	return spec, nil
}

// Values is a configuration of a one-stage space, parameter name to float64, int, int64 or
// string; see Configuration.
type Values map[string]interface{}

// Configuration builds a configuration of a pipeline space: for each stage, the algorithm chosen
// and its parameter values.
type Configuration map[string]Choice

// Choice is the algorithm chosen in one stage and its parameter values.
type Choice struct {
	Algorithm string
	Params    Values
}

func parameterValue(name string, v interface{}) (*pb.ParameterValue, error) {
	var number float64
	switch x := v.(type) {
	case string:
		return &pb.ParameterValue{Kind: &pb.ParameterValue_Category{Category: x}}, nil
	case float64:
		number = x
	case float32:
		number = float64(x)
	case int:
		number = float64(x)
	case int32:
		number = float64(x)
	case int64:
		number = float64(x)
	default:
		return nil, fmt.Errorf("metaopt: parameter %q: %v (%T) is not a number or a string", name, v, v)
	}
	if math.IsNaN(number) || math.IsInf(number, 0) {
		return nil, fmt.Errorf("metaopt: parameter %q: %v is not finite", name, number)
	}
	return &pb.ParameterValue{Kind: &pb.ParameterValue_Number{Number: number}}, nil
}

// Proto is the Configuration message of c.
func (c Configuration) Proto() (*pb.Configuration, error) {
	stages := make([]string, 0, len(c))
	for stage := range c {
		stages = append(stages, stage)
	}
	sort.Strings(stages)
	config := &pb.Configuration{}
	for _, stage := range stages {
		choice := c[stage]
		assignment := &pb.Assignment{Stage: stage, Algorithm: choice.Algorithm,
			Parameters: map[string]*pb.ParameterValue{}}
		for name, v := range choice.Params {
			value, err := parameterValue(name, v)
			if err != nil {
				return nil, err
			}
			assignment.Parameters[name] = value
		}
		config.Assignments = append(config.Assignments, assignment)
	}
	return config, nil
}
