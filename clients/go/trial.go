package metaopt

import (
	"fmt"
	"math"
	"time"

	pb "github.com/metaopt/metaopt/clients/go/metaoptv1"
)

// TrialState is a trial's state (metaopt.v1.TrialState).
type TrialState = pb.TrialState

// Trial states.
const (
	Active     = pb.TrialState_TRIAL_STATE_ACTIVE
	Completed  = pb.TrialState_TRIAL_STATE_COMPLETED
	Failed     = pb.TrialState_TRIAL_STATE_FAILED
	Infeasible = pb.TrialState_TRIAL_STATE_INFEASIBLE
	Abandoned  = pb.TrialState_TRIAL_STATE_ABANDONED
	Stale      = pb.TrialState_TRIAL_STATE_STALE
	// Stopped: the study's early-stopping rule stopped it (Study.Report), then it was observed
	// with its last reported value.
	Stopped = pb.TrialState_TRIAL_STATE_STOPPED
)

// Trial is a snapshot of one trial, decoded with its study's search space.
type Trial struct {
	proto *pb.Trial
	// kinds maps stage/algorithm/parameter to its domain (for Int).
	ints map[[3]string]bool
	// single maps a stage with one algorithm to it (Assignment.algorithm may be omitted).
	single map[string]string
}

func newTrial(proto *pb.Trial, space *pb.SearchSpace) *Trial {
	t := &Trial{proto: proto, ints: map[[3]string]bool{}, single: map[string]string{}}
	for _, stage := range space.GetStages() {
		if len(stage.Algorithms) == 1 {
			t.single[stage.Name] = stage.Algorithms[0].Name
		}
		for _, algorithm := range stage.Algorithms {
			for _, p := range algorithm.Parameters {
				if p.GetIntDomain() != nil {
					t.ints[[3]string{stage.Name, algorithm.Name, p.Name}] = true
				}
			}
		}
	}
	return t
}

// Proto is the metaopt.v1.Trial message.
func (t *Trial) Proto() *pb.Trial { return t.proto }

// ID is the trial's id within its study.
func (t *Trial) ID() int64 { return t.proto.Id }

// State is the trial's state when it was fetched.
func (t *Trial) State() TrialState { return t.proto.State }

// Value is the objective value of a COMPLETED trial; ok is false otherwise.
func (t *Trial) Value() (value float64, ok bool) {
	if t.proto.Value == nil {
		return 0, false
	}
	return *t.proto.Value, true
}

// Metrics are the metrics observed with the trial; in a study with several objectives, every
// objective's value by name (the first one's is also Value).
func (t *Trial) Metrics() map[string]float64 { return t.proto.Metrics }

// Feasible tells, in a study with constraints, whether this COMPLETED trial meets them all (a
// trial that does not is kept, but is never best nor on the Pareto front); ok is false in a
// study without constraints and for other states.
func (t *Trial) Feasible() (feasible bool, ok bool) {
	if t.proto.Feasible == nil {
		return false, false
	}
	return *t.proto.Feasible, true
}

// Metadata are the server's notes, for example {"policy": "gp/ei"}.
func (t *Trial) Metadata() map[string]string { return t.proto.Metadata }

// FailureReason is the reason of a FAILED or INFEASIBLE trial.
func (t *Trial) FailureReason() string { return t.proto.FailureReason }

// IntermediateValues are the values reported with Study.Report, by increasing step.
func (t *Trial) IntermediateValues() []*pb.IntermediateValue { return t.proto.IntermediateValues }

// LeaseExpireTime is when an ACTIVE trial's lease ends unless extended (zero if none).
func (t *Trial) LeaseExpireTime() time.Time {
	if t.proto.LeaseExpireTime == nil {
		return time.Time{}
	}
	return t.proto.LeaseExpireTime.AsTime()
}

// Algorithm is the algorithm the trial chose in stage.
func (t *Trial) Algorithm(stage string) (string, error) {
	a, err := t.assignment(stage)
	if err != nil {
		return "", err
	}
	if a.Algorithm != "" {
		return a.Algorithm, nil
	}
	return t.single[stage], nil
}

func (t *Trial) assignment(stage string) (*pb.Assignment, error) {
	for _, a := range t.proto.GetConfiguration().GetAssignments() {
		if a.Stage == stage {
			return a, nil
		}
	}
	return nil, fmt.Errorf("metaopt: trial %d: no stage %q", t.ID(), stage)
}

// find returns the stage, algorithm and value of the parameter name, which must be set in
// exactly one stage.
func (t *Trial) find(name string) (stage, algorithm string, value *pb.ParameterValue, err error) {
	for _, a := range t.proto.GetConfiguration().GetAssignments() {
		if v, ok := a.Parameters[name]; ok {
			if value != nil {
				return "", "", nil, fmt.Errorf(
					"metaopt: trial %d: parameter %q is set in stages %q and %q; use Params(stage)",
					t.ID(), name, stage, a.Stage)
			}
			stage, algorithm, value = a.Stage, a.Algorithm, v
			if algorithm == "" {
				algorithm = t.single[stage]
			}
		}
	}
	if value == nil {
		return "", "", nil, fmt.Errorf("metaopt: trial %d: no parameter %q", t.ID(), name)
	}
	return stage, algorithm, value, nil
}

// Float is the value of the numeric parameter name.
func (t *Trial) Float(name string) (float64, error) {
	_, _, v, err := t.find(name)
	if err != nil {
		return 0, err
	}
	number, ok := v.Kind.(*pb.ParameterValue_Number)
	if !ok {
		return 0, fmt.Errorf("metaopt: trial %d: parameter %q is categorical (%q), not a number",
			t.ID(), name, v.GetCategory())
	}
	return number.Number, nil
}

// Int is the value of the numeric parameter name, rounded to an integer.
func (t *Trial) Int(name string) (int64, error) {
	f, err := t.Float(name)
	if err != nil {
		return 0, err
	}
	return int64(math.Round(f)), nil
}

// Category is the value of the categorical parameter name.
func (t *Trial) Category(name string) (string, error) {
	_, _, v, err := t.find(name)
	if err != nil {
		return "", err
	}
	category, ok := v.Kind.(*pb.ParameterValue_Category)
	if !ok {
		return "", fmt.Errorf("metaopt: trial %d: parameter %q is numeric (%v), not categorical",
			t.ID(), name, v.GetNumber())
	}
	return category.Category, nil
}

// Params are the parameters of stage (of every stage when stage is ""), as float64, int64 (the
// space's integer parameters) or string.
func (t *Trial) Params(stage string) (Values, error) {
	out := Values{}
	found := stage == ""
	for _, a := range t.proto.GetConfiguration().GetAssignments() {
		if stage != "" && a.Stage != stage {
			continue
		}
		found = true
		algorithm := a.Algorithm
		if algorithm == "" {
			algorithm = t.single[a.Stage]
		}
		for name, v := range a.Parameters {
			if _, dup := out[name]; dup {
				return nil, fmt.Errorf("metaopt: trial %d: parameter %q is set in several stages; "+
					"give the stage", t.ID(), name)
			}
			switch kind := v.Kind.(type) {
			case *pb.ParameterValue_Category:
				out[name] = kind.Category
			case *pb.ParameterValue_Number:
				if t.ints[[3]string{a.Stage, algorithm, name}] {
					out[name] = int64(math.Round(kind.Number))
				} else {
					out[name] = kind.Number
				}
			}
		}
	}
	if !found {
		return nil, fmt.Errorf("metaopt: trial %d: no stage %q", t.ID(), stage)
	}
	return out, nil
}

func (t *Trial) String() string {
	params, err := t.Params("")
	if err != nil {
		params = nil
	}
	value := ""
	if v, ok := t.Value(); ok {
		value = fmt.Sprintf(" value=%g", v)
	}
	return fmt.Sprintf("trial %d %s%s %v", t.ID(), shortState(t.State()), value, params)
}

func shortState(s TrialState) string {
	name := s.String()
	const prefix = "TRIAL_STATE_"
	if len(name) > len(prefix) && name[:len(prefix)] == prefix {
		return name[len(prefix):]
	}
	return name
}
