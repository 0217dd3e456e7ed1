package metaopt

import (
	"errors"
	"math"
	"sort"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"

	pb "github.com/metaopt/metaopt/clients/go/metaoptv1"
)

// evaluate is a trade-off: deeper trees and larger learning rates are more accurate and slower;
// memory grows with depth (depth > 7 breaks the 300 MB limit).
func evaluate(t *testing.T, trial *Trial) map[string]float64 {
	t.Helper()
	lr, err := trial.Float("lr")
	if err != nil {
		t.Fatal(err)
	}
	depth, err := trial.Int("depth")
	if err != nil {
		t.Fatal(err)
	}
	l := math.Log10(lr) + 5
	d := float64(depth)
	return map[string]float64{
		"accuracy":    1 - 0.5*math.Exp(-0.3*d-0.4*l),
		"fit_seconds": d * d * (1 + l) / 10,
		"memory_mb":   40 * d,
	}
}

func twoObjectiveSpec(algorithm AlgorithmKind) Spec {
	return Spec{
		Space:     FlatSpace(LogFloat("lr", 1e-5, 1), Int("depth", 2, 10)),
		Algorithm: algorithm, InitialTrials: 5, Seed: 3,
		Objectives: []Objective{
			{Name: "accuracy", Goal: Maximize},
			{Name: "fit_seconds", Goal: Minimize},
		},
		Constraints: []Constraint{{Metric: "memory_mb", Sense: AtMost, Bound: 300}},
	}
}

func TestTwoObjectivesAndAConstraintEndToEnd(t *testing.T) {
	s := shared(t)
	ctx := testContext(t)
	client := dial(t, s.addr)
	study, err := client.CreateStudy(ctx, "go-pareto", twoObjectiveSpec(GP))
	if err != nil {
		t.Fatal(err)
	}
	if again, err := client.CreateStudy(ctx, "go-pareto", twoObjectiveSpec(GP)); err != nil || again.Created {
		t.Fatalf("create again: %v %v", again, err)
	}
	type point struct {
		id                int64
		accuracy, seconds float64
	}
	var feasible []point
	infeasible := 0
	policies := map[string]bool{}
	for i := 0; i < 14; i++ {
		trials, err := study.Suggest(ctx, 1)
		if err != nil {
			t.Fatal(err)
		}
		values := evaluate(t, trials[0])
		outcome := Metrics(values)
		if i%2 == 1 { // the first objective as the value, the rest as metrics
			outcome = Value(values["accuracy"]).WithMetrics(map[string]float64{
				"fit_seconds": values["fit_seconds"], "memory_mb": values["memory_mb"]})
		}
		done, err := study.ObserveOutcome(ctx, trials[0].ID(), outcome)
		if err != nil {
			t.Fatal(err)
		}
		if v, ok := done.Value(); !ok || v != values["accuracy"] {
			t.Fatalf("value %v, want the first objective's %v", v, values["accuracy"])
		}
		if done.Metrics()["fit_seconds"] != values["fit_seconds"] || done.Metrics()["accuracy"] != values["accuracy"] {
			t.Fatalf("metrics %v, want %v", done.Metrics(), values)
		}
		ok, known := done.Feasible()
		if !known || ok != (values["memory_mb"] <= 300) {
			t.Fatalf("feasible %v (known %v) for memory %v", ok, known, values["memory_mb"])
		}
		if ok {
			feasible = append(feasible, point{done.ID(), values["accuracy"], values["fit_seconds"]})
		} else {
			infeasible++
		}
		policies[done.Metadata()["policy"]] = true
	}
	if infeasible == 0 || !policies["gp/ehvi"] {
		t.Fatalf("infeasible trials %d, policies %v", infeasible, policies)
	}
	var want []int64
	for _, p := range feasible {
		dominated := false
		for _, q := range feasible {
			if q.accuracy >= p.accuracy && q.seconds <= p.seconds && (q.accuracy > p.accuracy || q.seconds < p.seconds) {
				dominated = true
			}
		}
		if !dominated {
			want = append(want, p.id)
		}
	}
	sort.Slice(want, func(i, j int) bool { return want[i] < want[j] })
	front, summary, err := study.ParetoFront(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var got []int64
	for _, trial := range front {
		got = append(got, trial.ID())
	}
	if len(got) != len(want) || summary.Size != int64(len(want)) {
		t.Fatalf("front %v (size %d), want %v", got, summary.Size, want)
	}
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("front %v, want %v", got, want)
		}
	}
	if len(summary.ReferencePoint) != 2 || !(summary.Hypervolume > 0) {
		t.Fatalf("summary %+v", summary)
	}
	if cached := study.ParetoFrontSummary(); cached.Size != summary.Size {
		t.Errorf("cached summary %+v, want %+v", cached, summary)
	}
	best, err := study.BestTrial(ctx)
	if err != nil || best == nil {
		t.Fatalf("best trial: %v %v", best, err)
	}
	if ok, _ := best.Feasible(); !ok {
		t.Errorf("best trial %v is not feasible", best)
	}

	// A missing objective value names the metric; the trial stays ACTIVE.
	trials, err := study.Suggest(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	_, err = study.ObserveOutcome(ctx, trials[0].ID(), Metrics(map[string]float64{"accuracy": 0.9, "memory_mb": 1}))
	var metaoptErr *Error
	if !errors.As(err, &metaoptErr) || metaoptErr.Code != codes.InvalidArgument ||
		!strings.Contains(metaoptErr.Message, `metrics["fit_seconds"]: missing`) {
		t.Fatalf("missing objective: %v", err)
	}
}

func TestSeveralObjectivesAreCheckedBeforeSending(t *testing.T) {
	spec := twoObjectiveSpec(GP)
	spec.Objective = "loss"
	if _, err := spec.Proto(); err == nil || !strings.Contains(err.Error(), "not both") {
		t.Errorf("objective and objectives: %v", err)
	}
	spec = twoObjectiveSpec(GP)
	spec.Constraints[0].Bound = math.NaN()
	if _, err := spec.Proto(); err == nil || !strings.Contains(err.Error(), "Constraints[0].Bound") {
		t.Errorf("NaN bound: %v", err)
	}
	spec = twoObjectiveSpec(GP)
	spec.Constraints[0].Sense = 0
	if _, err := spec.Proto(); err == nil || !strings.Contains(err.Error(), "Constraints[0].Sense") {
		t.Errorf("no sense: %v", err)
	}
	one := Spec{Space: FlatSpace(Float("x", 0, 1)), Objectives: []Objective{{Name: "loss", Goal: Minimize}}}
	p, err := one.Proto()
	if err != nil || len(p.Objectives) != 0 || p.Objective.Name != "loss" {
		t.Errorf("one objective: %v %v", p, err)
	}
	if err := Metrics(nil).fill(&pb.ObserveRequest{}); err == nil {
		t.Errorf("empty Metrics accepted")
	}
}
