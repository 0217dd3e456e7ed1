package metaopt

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"

	pb "github.com/metaopt/metaopt/clients/go/metaoptv1"
)

// Study is a handle on one study. Its cached message is replaced by Refresh; a Study may be
// shared between goroutines.
type Study struct {
	client *Client
	// Created is true if the CreateStudy call that returned this handle created the study.
	Created bool

	mu    sync.Mutex
	proto *pb.Study
}

func (c *Client) newStudy(p *pb.Study, created bool) *Study {
	return &Study{client: c, Created: created, proto: p}
}

// CreateStudy creates the study id, or gets it if it exists with an equal spec (Created is then
// false). The same id with another spec is an *Error with codes.AlreadyExists; an invalid spec
// one with codes.InvalidArgument whose message names the field.
func (c *Client) CreateStudy(ctx context.Context, id string, spec Spec) (*Study, error) {
	specProto, err := spec.Proto()
	if err != nil {
		return nil, err
	}
	return c.CreateStudyFromProto(ctx, id, specProto)
}

// CreateStudyFromProto is CreateStudy with a complete metaopt.v1.StudySpec (candidates, Mosaic
// options, ...).
func (c *Client) CreateStudyFromProto(ctx context.Context, id string, spec *pb.StudySpec) (*Study, error) {
	var response *pb.CreateStudyResponse
	err := c.call(ctx, "CreateStudy", retrySafe, func(ctx context.Context, opts ...grpc.CallOption) (err error) {
		response, err = c.stub.CreateStudy(ctx, &pb.CreateStudyRequest{StudyId: id, Spec: spec}, opts...)
		return err
	})
	if err != nil {
		return nil, err
	}
	return c.newStudy(response.Study, response.Created), nil
}

// GetStudy is the study id; an *Error with codes.NotFound if there is none.
func (c *Client) GetStudy(ctx context.Context, id string) (*Study, error) {
	p, err := c.getStudy(ctx, id)
	if err != nil {
		return nil, err
	}
	return c.newStudy(p, false), nil
}

func (c *Client) getStudy(ctx context.Context, id string) (*pb.Study, error) {
	var response *pb.GetStudyResponse
	err := c.call(ctx, "GetStudy", retrySafe, func(ctx context.Context, opts ...grpc.CallOption) (err error) {
		response, err = c.stub.GetStudy(ctx, &pb.GetStudyRequest{StudyId: id}, opts...)
		return err
	})
	if err != nil {
		return nil, err
	}
	return response.Study, nil
}

// ListStudies is every study (of the caller's namespace), ordered by id.
func (c *Client) ListStudies(ctx context.Context) ([]*Study, error) {
	var studies []*Study
	token := ""
	for {
		var response *pb.ListStudiesResponse
		err := c.call(ctx, "ListStudies", retrySafe, func(ctx context.Context, opts ...grpc.CallOption) (err error) {
			response, err = c.stub.ListStudies(ctx, &pb.ListStudiesRequest{PageSize: 100, PageToken: token}, opts...)
			return err
		})
		if err != nil {
			return nil, err
		}
		for _, s := range response.Studies {
			studies = append(studies, c.newStudy(s, false))
		}
		if token = response.NextPageToken; token == "" {
			return studies, nil
		}
	}
}

// DeleteStudy deletes the study id with its trials. A retry that finds it already gone
// succeeds.
func (c *Client) DeleteStudy(ctx context.Context, id string) error {
	policy := retrySafe
	policy.recover = func(ctx context.Context, err *Error) bool { return err.Code == codes.NotFound }
	return c.call(ctx, "DeleteStudy", policy, func(ctx context.Context, opts ...grpc.CallOption) error {
		_, err := c.stub.DeleteStudy(ctx, &pb.DeleteStudyRequest{StudyId: id}, opts...)
		return err
	})
}

// ID is the study's id.
func (s *Study) ID() string { return s.Proto().StudyId }

// Proto is the metaopt.v1.Study message as last fetched.
func (s *Study) Proto() *pb.Study {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.proto
}

func (s *Study) space() *pb.SearchSpace { return s.Proto().GetSpec().GetSearchSpace() }

// BoundModel is the registry model the study is bound to ("name@version"), empty if none.
func (s *Study) BoundModel() string { return s.Proto().BoundModel }

// TrialCount is the number of trials as last fetched (see Refresh).
func (s *Study) TrialCount() int64 { return s.Proto().TrialCount }

// Refresh fetches the study again (trial count, best trial, state).
func (s *Study) Refresh(ctx context.Context) error {
	p, err := s.client.getStudy(ctx, s.ID())
	if err != nil {
		return err
	}
	s.mu.Lock()
	s.proto = p
	s.mu.Unlock()
	return nil
}

// Suggest asks for up to count trials to evaluate, as the client's client id. The client's ACTIVE
// trials (not yet observed) come back first, so a retry, or a worker restarted with the same id,
// gets the same trials. A catalogue study returns fewer (finally none) once its candidates run
// out.
func (s *Study) Suggest(ctx context.Context, count int) ([]*Trial, error) {
	return s.SuggestAs(ctx, count, s.client.clientID)
}

// SuggestAs is Suggest as the worker clientID (1 to 128 bytes).
func (s *Study) SuggestAs(ctx context.Context, count int, clientID string) ([]*Trial, error) {
	if count < 1 || count > 1000 {
		return nil, fmt.Errorf("metaopt: suggest: count %d is not in 1..1000", count)
	}
	if clientID == "" || len(clientID) > maxClientID {
		return nil, fmt.Errorf("metaopt: suggest: client id %q must have 1 to %d bytes", clientID, maxClientID)
	}
	request := &pb.SuggestRequest{StudyId: s.ID(), Count: int32(count), ClientId: clientID}
	var response *pb.SuggestResponse
	err := s.client.call(ctx, "Suggest", retrySafeAborted, func(ctx context.Context, opts ...grpc.CallOption) (err error) {
		response, err = s.client.stub.Suggest(ctx, request, opts...)
		return err
	})
	if err != nil {
		return nil, err
	}
	return s.trials(response.Trials), nil
}

func (s *Study) trials(protos []*pb.Trial) []*Trial {
	space := s.space()
	trials := make([]*Trial, len(protos))
	for i, p := range protos {
		trials[i] = newTrial(p, space)
	}
	return trials
}

// Outcome is what an evaluation produced: an objective value, or a failure. Build it with
// Value, Metrics, Failure or Infeasibility.
type Outcome struct {
	value float64
	// inMetrics: a completed evaluation whose objectives' values are all in metrics.
	inMetrics bool
	failure   *pb.Failure
	metrics   map[string]float64
}

// Value is a completed evaluation's objective value (in a study with several objectives, the
// first one's; add the others WithMetrics).
func Value(v float64) Outcome { return Outcome{value: v} }

// Metrics is a completed evaluation of a study with several objectives or with constraints:
// every objective's and constrained metric's value by name, and any other metrics.
func Metrics(metrics map[string]float64) Outcome { return Outcome{inMetrics: true, metrics: metrics} }

// Failure is an evaluation that broke (the trial becomes FAILED).
func Failure(reason string) Outcome {
	return Outcome{failure: &pb.Failure{State: Failed, Reason: reason}}
}

// Infeasibility is a configuration that cannot be evaluated (the trial becomes INFEASIBLE).
func Infeasibility(reason string) Outcome {
	return Outcome{failure: &pb.Failure{State: Infeasible, Reason: reason}}
}

// WithMetrics adds named metrics to the outcome.
func (o Outcome) WithMetrics(metrics map[string]float64) Outcome {
	o.metrics = metrics
	return o
}

func (o Outcome) fill(request *pb.ObserveRequest) error {
	if o.failure != nil {
		if o.failure.Reason == "" {
			return errors.New("metaopt: observe: a failure needs a reason")
		}
		request.Outcome = &pb.ObserveRequest_Failure{Failure: o.failure}
	} else if o.inMetrics {
		if len(o.metrics) == 0 {
			return errors.New("metaopt: observe: Metrics: empty; give the objectives' values")
		}
	} else {
		if math.IsNaN(o.value) || math.IsInf(o.value, 0) {
			return fmt.Errorf("metaopt: observe: value %v is not finite; report a Failure instead", o.value)
		}
		request.Outcome = &pb.ObserveRequest_Value{Value: o.value}
	}
	for name, v := range o.metrics {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Errorf("metaopt: observe: metric %q: %v is not finite", name, v)
		}
	}
	request.Metrics = o.metrics
	return nil
}

func sameOutcome(t *pb.Trial, request *pb.ObserveRequest) bool {
	switch outcome := request.Outcome.(type) {
	case *pb.ObserveRequest_Value:
		return t.State == Completed && t.Value != nil && *t.Value == outcome.Value
	case *pb.ObserveRequest_Failure:
		return t.State == outcome.Failure.State && t.FailureReason == outcome.Failure.Reason
	case nil: // every value in metrics: the trial holds them all
		if t.State != Completed || t.Value == nil {
			return false
		}
		for name, v := range request.Metrics {
			if got, ok := t.Metrics[name]; !ok || got != v {
				return false
			}
		}
		return true
	}
	return false
}

// Observe reports the objective value of trial trialID; it returns the completed trial. A trial
// already observed with another outcome is an *Error with codes.FailedPrecondition.
func (s *Study) Observe(ctx context.Context, trialID int64, value float64) (*Trial, error) {
	return s.ObserveOutcome(ctx, trialID, Value(value))
}

// ObserveOutcome reports trial trialID's outcome: a Value, a Failure or an Infeasibility, with
// optional metrics.
func (s *Study) ObserveOutcome(ctx context.Context, trialID int64, outcome Outcome) (*Trial, error) {
	// The study's incarnation: the server refuses a trial of a deleted study that had this id.
	request := &pb.ObserveRequest{StudyId: s.ID(), Target: &pb.ObserveRequest_TrialId{TrialId: trialID},
		StudyIncarnation: s.Proto().GetIncarnation()}
	if err := outcome.fill(request); err != nil {
		return nil, err
	}
	var observed *pb.Trial
	policy := retrySafe
	policy.recover = func(ctx context.Context, err *Error) bool {
		// A lost attempt may have been applied: the trial then holds this outcome.
		if err.Code != codes.FailedPrecondition {
			return false
		}
		current, getErr := s.getTrial(ctx, trialID)
		if getErr != nil || !sameOutcome(current, request) {
			return false
		}
		observed = current
		return true
	}
	err := s.client.call(ctx, "Observe", policy, func(ctx context.Context, opts ...grpc.CallOption) error {
		response, err := s.client.stub.Observe(ctx, request, opts...)
		if err == nil {
			observed = response.Trial
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	return newTrial(observed, s.space()), nil
}

// ObserveConfiguration records an externally evaluated configuration (a warm start from earlier
// results) as a new trial. Never retried: a retry would record it twice.
func (s *Study) ObserveConfiguration(ctx context.Context, config Configuration, outcome Outcome) (*Trial, error) {
	configProto, err := config.Proto()
	if err != nil {
		return nil, err
	}
	request := &pb.ObserveRequest{StudyId: s.ID(),
		Target: &pb.ObserveRequest_Configuration{Configuration: configProto}}
	if err := outcome.fill(request); err != nil {
		return nil, err
	}
	var response *pb.ObserveResponse
	err = s.client.call(ctx, "Observe", noRetry, func(ctx context.Context, opts ...grpc.CallOption) (err error) {
		response, err = s.client.stub.Observe(ctx, request, opts...)
		return err
	})
	if err != nil {
		return nil, err
	}
	return newTrial(response.Trial, s.space()), nil
}

// Heartbeat extends the leases of ACTIVE trials still being evaluated; it returns them with their
// new lease expiry.
func (s *Study) Heartbeat(ctx context.Context, trialIDs ...int64) ([]*Trial, error) {
	if len(trialIDs) == 0 || len(trialIDs) > 1000 {
		return nil, fmt.Errorf("metaopt: heartbeat: %d trial ids, need 1..1000", len(trialIDs))
	}
	var response *pb.HeartbeatResponse
	err := s.client.call(ctx, "Heartbeat", retrySafe, func(ctx context.Context, opts ...grpc.CallOption) (err error) {
		response, err = s.client.stub.Heartbeat(ctx, &pb.HeartbeatRequest{StudyId: s.ID(), TrialIds: trialIDs,
			StudyIncarnation: s.Proto().GetIncarnation()}, opts...)
		return err
	})
	if err != nil {
		return nil, err
	}
	return s.trials(response.Trials), nil
}

// Report is what Study.Report answered.
type Report struct {
	// ShouldStop: evaluate no further and call ObserveStopped; the trial ends Stopped.
	ShouldStop bool
	// Reason names the rule and the numbers it compared (empty when continuing).
	Reason string
	// Trial is the trial after the report.
	Trial *Trial
}

// ReportOption sets an optional field of Study.Report's request.
type ReportOption func(*reportOptions)

type reportOptions struct {
	stopReason *string
}

// StopReason makes the report the client's own stop (ReportIntermediateRequest.client_stop_reason):
// the client stops the trial at this step by a rule of its own and says why (non-empty, at most
// 1000 bytes). The study's rule is not asked; the answer is ShouldStop with Reason
// "client: " + reason, and ObserveStopped ends the trial Stopped.
func StopReason(reason string) ReportOption {
	return func(o *reportOptions) { o.stopReason = &reason }
}

// Report records an intermediate value of ACTIVE trial trialID at step (epoch, iteration; >= 0)
// with optional metrics, extends the trial's lease, and says whether the study's early-stopping
// rule wants the trial stopped (or, with StopReason, stops it by the client's own rule).
// Idempotent per (trial, step), so it is retried on UNAVAILABLE.
func (s *Study) Report(ctx context.Context, trialID, step int64, value float64, metrics map[string]float64,
	opts ...ReportOption) (*Report, error) {
	if step < 0 {
		return nil, fmt.Errorf("metaopt: report: step: %d is negative", step)
	}
	if math.IsNaN(value) || math.IsInf(value, 0) {
		return nil, fmt.Errorf("metaopt: report: value: %v is not finite", value)
	}
	var o reportOptions
	for _, opt := range opts {
		opt(&o)
	}
	request := &pb.ReportIntermediateRequest{StudyId: s.ID(), TrialId: trialID, Step: step, Value: value, Metrics: metrics,
		StudyIncarnation: s.Proto().GetIncarnation()}
	if o.stopReason != nil {
		if *o.stopReason == "" {
			return nil, fmt.Errorf("metaopt: report: stop reason: empty; say why the client stops the trial")
		}
		request.ClientStopReason = *o.stopReason
	}
	var response *pb.ReportIntermediateResponse
	err := s.client.call(ctx, "ReportIntermediate", retrySafe, func(ctx context.Context, opts ...grpc.CallOption) (err error) {
		response, err = s.client.stub.ReportIntermediate(ctx, request, opts...)
		return err
	})
	if err != nil {
		return nil, err
	}
	return &Report{ShouldStop: response.ShouldStop, Reason: response.Reason, Trial: newTrial(response.Trial, s.space())}, nil
}

// ObserveStopped observes trial trialID with the value of its largest reported step: after
// Report answered ShouldStop, the trial ends Stopped.
func (s *Study) ObserveStopped(ctx context.Context, trialID int64) (*Trial, error) {
	trial, err := s.getTrial(ctx, trialID)
	if err != nil {
		return nil, err
	}
	values := trial.IntermediateValues
	if len(values) == 0 {
		return nil, fmt.Errorf("metaopt: trial %d: no intermediate value was reported", trialID)
	}
	return s.Observe(ctx, trialID, values[len(values)-1].Value)
}

func (s *Study) getTrial(ctx context.Context, id int64) (*pb.Trial, error) {
	var response *pb.GetTrialResponse
	err := s.client.call(ctx, "GetTrial", retrySafe, func(ctx context.Context, opts ...grpc.CallOption) (err error) {
		response, err = s.client.stub.GetTrial(ctx, &pb.GetTrialRequest{StudyId: s.ID(), TrialId: id}, opts...)
		return err
	})
	if err != nil {
		return nil, err
	}
	return response.Trial, nil
}

// Trial is trial id of the study.
func (s *Study) Trial(ctx context.Context, id int64) (*Trial, error) {
	p, err := s.getTrial(ctx, id)
	if err != nil {
		return nil, err
	}
	return newTrial(p, s.space()), nil
}

// Trials are the study's trials by increasing id; with a state other than
// TRIAL_STATE_UNSPECIFIED (0), only those in it.
func (s *Study) Trials(ctx context.Context, state TrialState) ([]*Trial, error) {
	var trials []*Trial
	token := ""
	for {
		request := &pb.ListTrialsRequest{StudyId: s.ID(), PageSize: 1000, PageToken: token, State: state}
		var response *pb.ListTrialsResponse
		err := s.client.call(ctx, "ListTrials", retrySafe, func(ctx context.Context, opts ...grpc.CallOption) (err error) {
			response, err = s.client.stub.ListTrials(ctx, request, opts...)
			return err
		})
		if err != nil {
			return nil, err
		}
		trials = append(trials, s.trials(response.Trials)...)
		if token = response.NextPageToken; token == "" {
			return trials, nil
		}
	}
}

// BestTrial is the best COMPLETED trial for the study's goal, fetched now; nil if there is none.
// With constraints, the best feasible one; with several objectives, the Pareto front's best in
// the first objective.
func (s *Study) BestTrial(ctx context.Context) (*Trial, error) {
	if err := s.Refresh(ctx); err != nil {
		return nil, err
	}
	best := s.Proto().GetBestTrial()
	if best == nil || proto.Equal(best, &pb.Trial{}) {
		return nil, nil
	}
	return newTrial(best, s.space()), nil
}

// ParetoFrontSummary is a study's Pareto front summarized: how many trials are on it, and the
// hypervolume they dominate up to ReferencePoint (one coordinate per objective, in the
// objectives' own units and order).
type ParetoFrontSummary struct {
	Size           int64
	Hypervolume    float64
	ReferencePoint []float64
}

func summaryOf(p *pb.ParetoFrontSummary) ParetoFrontSummary {
	return ParetoFrontSummary{Size: p.GetSize(), Hypervolume: p.GetHypervolume(),
		ReferencePoint: append([]float64(nil), p.GetReferencePoint()...)}
}

// ParetoFrontSummary is the study's Pareto front summary as last fetched (Refresh,
// ParetoFront).
func (s *Study) ParetoFrontSummary() ParetoFrontSummary {
	return summaryOf(s.Proto().GetParetoFront())
}

// ParetoFront is the study's Pareto front now (GetParetoFront, every page): its non-dominated
// feasible COMPLETED trials by increasing id, each with its objectives' values in Metrics; with
// a single objective, its best trials (all that tie). It also returns the front's summary.
func (s *Study) ParetoFront(ctx context.Context) ([]*Trial, ParetoFrontSummary, error) {
	var front []*Trial
	var summary *pb.ParetoFrontSummary
	token := ""
	for {
		request := &pb.GetParetoFrontRequest{StudyId: s.ID(), PageSize: 1000, PageToken: token}
		var response *pb.GetParetoFrontResponse
		err := s.client.call(ctx, "GetParetoFront", retrySafe, func(ctx context.Context, opts ...grpc.CallOption) (err error) {
			response, err = s.client.stub.GetParetoFront(ctx, request, opts...)
			return err
		})
		if err != nil {
			return nil, ParetoFrontSummary{}, err
		}
		if summary == nil {
			summary = response.Summary
		}
		front = append(front, s.trials(response.Trials)...)
		if token = response.NextPageToken; token == "" {
			break
		}
	}
	s.mu.Lock()
	updated := proto.Clone(s.proto).(*pb.Study)
	updated.ParetoFront = summary
	s.proto = updated
	s.mu.Unlock()
	return front, summaryOf(summary), nil
}

// Delete deletes the study with its trials.
func (s *Study) Delete(ctx context.Context) error { return s.client.DeleteStudy(ctx, s.ID()) }
