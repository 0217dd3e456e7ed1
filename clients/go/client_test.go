package metaopt

// End-to-end tests against the real metaopt-server ($METAOPT_SERVER_BINARY, which ctest sets),
// started on 127.0.0.1 with port 0 and a temporary database.

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	pb "github.com/metaopt/metaopt/clients/go/metaoptv1"
)

var listening = regexp.MustCompile(`listening on [0-9.]+:([0-9]+)`)

// server is a metaopt-server child process.
type server struct {
	addr string
	dir  string
	cmd  *exec.Cmd
	log  string
}

// launch starts metaopt-server in dir with a database and an empty model registry there, and
// waits for its "listening on" line. stop kills it.
func launch(dir string, extraArgs ...string) (s *server, stop func(), err error) {
	binary := os.Getenv("METAOPT_SERVER_BINARY")
	models := filepath.Join(dir, "models")
	if err := os.MkdirAll(models, 0o755); err != nil {
		return nil, nil, err
	}
	s = &server{dir: dir, log: filepath.Join(dir, "server.log")}
	logFile, err := os.Create(s.log)
	if err != nil {
		return nil, nil, err
	}
	defer logFile.Close()
	args := append([]string{"--listen=127.0.0.1:0", "--db=" + filepath.Join(dir, "metaopt.db"),
		"--models=" + models}, extraArgs...)
	s.cmd = exec.Command(binary, args...)
	s.cmd.Stdout, s.cmd.Stderr = logFile, logFile
	if err := s.cmd.Start(); err != nil {
		return nil, nil, fmt.Errorf("start %s: %w", binary, err)
	}
	exited := make(chan error, 1)
	go func() { exited <- s.cmd.Wait() }()
	stop = func() {
		_ = s.cmd.Process.Kill()
		<-exited
	}
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); {
		text, _ := os.ReadFile(s.log)
		if m := listening.FindSubmatch(text); m != nil {
			s.addr = "127.0.0.1:" + string(m[1])
			return s, stop, nil
		}
		select {
		case err := <-exited:
			return nil, nil, fmt.Errorf("metaopt-server exited early (%v):\n%s", err, text)
		case <-time.After(50 * time.Millisecond):
		}
	}
	stop()
	text, _ := os.ReadFile(s.log)
	return nil, nil, fmt.Errorf("metaopt-server did not report its port:\n%s", text)
}

func requireServerBinary(t *testing.T) {
	if os.Getenv("METAOPT_SERVER_BINARY") == "" {
		t.Skip("METAOPT_SERVER_BINARY is not set: run the tests through ctest (go_client_test), " +
			"or set it to a metaopt-server binary")
	}
}

// startServer starts a server for one test, stopped when it ends.
func startServer(t *testing.T, extraArgs ...string) *server {
	t.Helper()
	requireServerBinary(t)
	s, stop, err := launch(t.TempDir(), extraArgs...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	return s
}

var (
	sharedOnce   sync.Once
	sharedServer *server
	sharedErr    error
	runCleanups  []func()
)

// shared is one server, kept until TestMain ends, for the tests that need no special flags.
func shared(t *testing.T) *server {
	t.Helper()
	requireServerBinary(t)
	sharedOnce.Do(func() {
		dir, err := os.MkdirTemp("", "metaopt-go-")
		if err != nil {
			sharedErr = err
			return
		}
		runCleanups = append(runCleanups, func() { os.RemoveAll(dir) })
		var stop func()
		sharedServer, stop, sharedErr = launch(dir)
		if sharedErr == nil {
			runCleanups = append(runCleanups, stop)
		}
	})
	if sharedErr != nil {
		t.Fatal(sharedErr)
	}
	return sharedServer
}

func TestMain(m *testing.M) {
	code := m.Run()
	for i := len(runCleanups) - 1; i >= 0; i-- {
		runCleanups[i]()
	}
	os.Exit(code)
}

func dial(t *testing.T, addr string, opts ...Option) *Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := Dial(ctx, addr, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func quadraticSpec(algorithm AlgorithmKind) Spec {
	return Spec{
		Space:     FlatSpace(Float("x", -5, 5), Int("n", 1, 10), Categorical("kind", "a", "b")),
		Objective: "loss", Goal: Minimize, Algorithm: algorithm, Seed: 7,
	}
}

func quadratic(t *testing.T, trial *Trial) float64 {
	t.Helper()
	x, err := trial.Float("x")
	if err != nil {
		t.Fatal(err)
	}
	n, err := trial.Int("n")
	if err != nil {
		t.Fatal(err)
	}
	kind, err := trial.Category("kind")
	if err != nil {
		t.Fatal(err)
	}
	if x < -5 || x > 5 || n < 1 || n > 10 || (kind != "a" && kind != "b") {
		t.Fatalf("trial outside the space: %v", trial)
	}
	penalty := 0.0
	if kind == "b" {
		penalty = 1
	}
	return (x-1)*(x-1) + float64(n) + penalty
}

func TestAskTellCompletesAGPStudy(t *testing.T) {
	s := shared(t)
	ctx := testContext(t)
	client := dial(t, s.addr)
	study, err := client.CreateStudy(ctx, "go-quadratic", quadraticSpec(GP))
	if err != nil {
		t.Fatal(err)
	}
	if !study.Created || study.ID() != "go-quadratic" {
		t.Fatalf("created %v id %q", study.Created, study.ID())
	}
	policies := map[string]bool{}
	best := math.Inf(1)
	for i := 0; i < 12; i++ {
		trials, err := study.Suggest(ctx, 1)
		if err != nil {
			t.Fatal(err)
		}
		if len(trials) != 1 || trials[0].State() != Active {
			t.Fatalf("suggest: %v", trials)
		}
		params, err := trials[0].Params("")
		if err != nil {
			t.Fatal(err)
		}
		if _, isInt := params["n"].(int64); !isInt {
			t.Errorf("n decoded as %T, want int64", params["n"])
		}
		value := quadratic(t, trials[0])
		best = math.Min(best, value)
		done, err := study.Observe(ctx, trials[0].ID(), value)
		if err != nil {
			t.Fatal(err)
		}
		if v, ok := done.Value(); done.State() != Completed || !ok || v != value {
			t.Fatalf("observed trial: %v", done)
		}
		policies[done.Metadata()["policy"]] = true
	}
	if !policies["gp/ei"] {
		t.Errorf("the GP never took over from the initial design: policies %v", policies)
	}
	top, err := study.BestTrial(ctx)
	if err != nil || top == nil {
		t.Fatalf("best trial: %v %v", top, err)
	}
	if v, _ := top.Value(); v != best {
		t.Errorf("best value %v, want %v", v, best)
	}
	if study.TrialCount() != 12 {
		t.Errorf("trial count %d, want 12", study.TrialCount())
	}
	completed, err := study.Trials(ctx, Completed)
	if err != nil || len(completed) != 12 {
		t.Fatalf("completed trials: %d %v", len(completed), err)
	}
}

func TestCreateStudyIsCreateOrGet(t *testing.T) {
	s := shared(t)
	ctx := testContext(t)
	client := dial(t, s.addr)
	first, err := client.CreateStudy(ctx, "go-create", quadraticSpec(Random))
	if err != nil || !first.Created {
		t.Fatalf("first create: %v %v", first, err)
	}
	again, err := client.CreateStudy(ctx, "go-create", quadraticSpec(Random))
	if err != nil || again.Created {
		t.Fatalf("second create: created %v, %v", again != nil && again.Created, err)
	}
	_, err = client.CreateStudy(ctx, "go-create", quadraticSpec(GP))
	var e *Error
	if !errors.As(err, &e) || e.Code != codes.AlreadyExists || e.Method != "CreateStudy" {
		t.Fatalf("other spec: %v", err)
	}
	if status.Code(err) != codes.AlreadyExists || Code(err) != codes.AlreadyExists {
		t.Errorf("status.Code %v, Code %v", status.Code(err), Code(err))
	}
	if !errors.Is(err, &Error{Code: codes.AlreadyExists}) {
		t.Errorf("errors.Is does not match the code")
	}

	got, err := client.GetStudy(ctx, "go-create")
	if err != nil || got.Proto().GetSpec().GetAlgorithm().GetKind() != Random {
		t.Fatalf("get: %v %v", got, err)
	}
	studies, err := client.ListStudies(ctx)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, st := range studies {
		found = found || st.ID() == "go-create"
	}
	if !found {
		t.Errorf("go-create not listed")
	}
	if err := got.Delete(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := client.GetStudy(ctx, "go-create"); Code(err) != codes.NotFound {
		t.Fatalf("after delete: %v", err)
	}
}

func TestTrialOfADeletedStudyIsNotTakenForTheNewOnes(t *testing.T) {
	s := shared(t)
	ctx := testContext(t)
	client := dial(t, s.addr)
	old, err := client.CreateStudy(ctx, "go-reborn", quadraticSpec(Random))
	if err != nil {
		t.Fatal(err)
	}
	stale, err := old.Suggest(ctx, 1)
	if err != nil || len(stale) != 1 {
		t.Fatalf("suggest: %v %v", stale, err)
	}
	if err := old.Delete(ctx); err != nil {
		t.Fatal(err)
	}
	reborn, err := client.CreateStudy(ctx, "go-reborn", quadraticSpec(Random))
	if err != nil {
		t.Fatal(err)
	}
	if reborn.Proto().GetIncarnation() == old.Proto().GetIncarnation() {
		t.Fatalf("same incarnation %d", reborn.Proto().GetIncarnation())
	}
	fresh, err := reborn.Suggest(ctx, 1)
	if err != nil || len(fresh) != 1 || fresh[0].ID() != stale[0].ID() {
		t.Fatalf("suggest again: %v %v", fresh, err)
	}
	// The old handle carries its incarnation: its worker's result is refused.
	if _, err := old.Observe(ctx, stale[0].ID(), 1.0); Code(err) != codes.NotFound {
		t.Fatalf("observe of the deleted study's trial: %v", err)
	}
	if _, err := old.Heartbeat(ctx, stale[0].ID()); Code(err) != codes.NotFound {
		t.Fatalf("heartbeat of the deleted study's trial: %v", err)
	}
	if _, err := reborn.Observe(ctx, fresh[0].ID(), 1.0); err != nil {
		t.Fatal(err)
	}
}

func TestServerValidationNamesTheField(t *testing.T) {
	s := shared(t)
	ctx := testContext(t)
	client := dial(t, s.addr)
	_, err := client.CreateStudy(ctx, "bad id!", quadraticSpec(Random))
	if Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), "study_id") {
		t.Fatalf("bad id: %v", err)
	}
	_, err = client.CreateStudy(ctx, "go-bad-bounds", Spec{Space: FlatSpace(Float("x", 2, 1))})
	if Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), "parameters[0]") ||
		!strings.Contains(err.Error(), "low 2 > high 1") {
		t.Fatalf("bad bounds: %v", err)
	}
}

func TestClientSideValidation(t *testing.T) {
	s := shared(t)
	ctx := testContext(t)
	client := dial(t, s.addr)
	if _, err := client.CreateStudy(ctx, "go-empty", Spec{}); err == nil ||
		!strings.Contains(err.Error(), "Space") {
		t.Errorf("empty spec: %v", err)
	}
	study, err := client.CreateStudy(ctx, "go-validation", quadraticSpec(Random))
	if err != nil {
		t.Fatal(err)
	}
	trials, err := study.Suggest(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := study.Observe(ctx, trials[0].ID(), math.NaN()); err == nil ||
		!strings.Contains(err.Error(), "not finite") {
		t.Errorf("NaN: %v", err)
	}
	if _, err := study.ObserveOutcome(ctx, trials[0].ID(), Failure("")); err == nil {
		t.Errorf("a failure without a reason was accepted")
	}
	if _, err := study.Suggest(ctx, 0); err == nil {
		t.Errorf("count 0 was accepted")
	}
	if _, err := study.SuggestAs(ctx, 1, strings.Repeat("w", 129)); err == nil {
		t.Errorf("a 129-byte client id was accepted")
	}
	if _, err := Dial(ctx, ""); err == nil {
		t.Errorf("an empty target was accepted")
	}
	if _, err := Dial(ctx, s.addr, WithTLSFiles("", "client.pem", "", "")); err == nil {
		t.Errorf("a certificate without a key was accepted")
	}
	if _, err := study.Trial(ctx, trials[0].ID()); err != nil {
		t.Fatal(err)
	}
	if _, err := trials[0].Category("x"); err == nil {
		t.Errorf("a numeric parameter read as a category")
	}
	if _, err := trials[0].Float("missing"); err == nil {
		t.Errorf("a missing parameter was read")
	}
}

func TestFailedAndInfeasibleOutcomes(t *testing.T) {
	s := shared(t)
	ctx := testContext(t)
	client := dial(t, s.addr)
	study, err := client.CreateStudy(ctx, "go-failures", quadraticSpec(Random))
	if err != nil {
		t.Fatal(err)
	}
	trials, err := study.Suggest(ctx, 2)
	if err != nil || len(trials) != 2 {
		t.Fatalf("suggest 2: %v %v", trials, err)
	}
	failed, err := study.ObserveOutcome(ctx, trials[0].ID(),
		Failure("out of memory").WithMetrics(map[string]float64{"seconds": 3}))
	if err != nil || failed.State() != Failed || failed.FailureReason() != "out of memory" ||
		failed.Metrics()["seconds"] != 3 {
		t.Fatalf("failed: %v %v", failed, err)
	}
	infeasible, err := study.ObserveOutcome(ctx, trials[1].ID(), Infeasibility("kernel needs n > 3"))
	if err != nil || infeasible.State() != Infeasible {
		t.Fatalf("infeasible: %v %v", infeasible, err)
	}
	// Observing again with another outcome is refused.
	_, err = study.Observe(ctx, trials[0].ID(), 1)
	if Code(err) != codes.FailedPrecondition {
		t.Fatalf("second observe: %v", err)
	}
	// A warm-start observation of an external configuration.
	external, err := study.ObserveConfiguration(ctx, Configuration{
		"model": {Algorithm: "model", Params: Values{"x": 1.0, "n": 1, "kind": "a"}}}, Value(1))
	if err != nil || external.State() != Completed {
		t.Fatalf("external: %v %v", external, err)
	}
}

func TestHeartbeatExtendsTheLease(t *testing.T) {
	s := shared(t)
	ctx := testContext(t)
	client := dial(t, s.addr)
	study, err := client.CreateStudy(ctx, "go-heartbeat", quadraticSpec(Random))
	if err != nil {
		t.Fatal(err)
	}
	trials, err := study.Suggest(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	before := trials[0].LeaseExpireTime()
	if before.IsZero() {
		t.Fatalf("no lease on %v", trials[0])
	}
	beaten, err := study.Heartbeat(ctx, trials[0].ID())
	if err != nil || len(beaten) != 1 {
		t.Fatalf("heartbeat: %v %v", beaten, err)
	}
	if beaten[0].State() != Active || beaten[0].LeaseExpireTime().Before(before) {
		t.Errorf("after the heartbeat: %v, lease %v (before: %v)", beaten[0], beaten[0].LeaseExpireTime(), before)
	}
	if _, err := study.Heartbeat(ctx); err == nil {
		t.Errorf("a heartbeat without trials was accepted")
	}
}

func TestReportStopsATrialThatEndsStopped(t *testing.T) {
	s := shared(t)
	ctx := testContext(t)
	client := dial(t, s.addr)
	spec := quadraticSpec(Random) // minimizes
	spec.EarlyStopping = &pb.EarlyStoppingSpec{Rule: &pb.EarlyStoppingSpec_Threshold{
		Threshold: &pb.ThresholdRule{Threshold: 1.0, StartStep: 1}}}
	study, err := client.CreateStudy(ctx, "go-report", spec)
	if err != nil {
		t.Fatal(err)
	}
	trials, err := study.Suggest(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	id := trials[0].ID()
	for step, want := range []bool{false, false, true} {
		value := []float64{5.0, 0.8, 1.5}[step]
		r, err := study.Report(ctx, id, int64(step), value, map[string]float64{"epoch": float64(step)})
		if err != nil {
			t.Fatal(err)
		}
		if r.ShouldStop != want {
			t.Errorf("step %d: should_stop %v, want %v (%s)", step, r.ShouldStop, want, r.Reason)
		}
		if len(r.Trial.IntermediateValues()) != step+1 {
			t.Errorf("step %d: %d values recorded", step, len(r.Trial.IntermediateValues()))
		}
	}
	if _, err := study.Report(ctx, id, 2, 1.6, nil); err == nil {
		t.Errorf("another value for a recorded step was accepted")
	}
	if _, err := study.Report(ctx, id, -1, 1.6, nil); err == nil {
		t.Errorf("a negative step was accepted")
	}
	stopped, err := study.ObserveStopped(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if v, _ := stopped.Value(); stopped.State() != Stopped || v != 1.5 {
		t.Errorf("after ObserveStopped: %v", stopped)
	}
	listed, err := study.Trials(ctx, Stopped)
	if err != nil || len(listed) != 1 || listed[0].ID() != id {
		t.Errorf("stopped trials: %v %v", listed, err)
	}
}

func TestReportStopReasonStopsATrialByTheClientsRule(t *testing.T) {
	s := shared(t)
	ctx := testContext(t)
	client := dial(t, s.addr)
	// No early-stopping rule in the spec: only the client's own stop can mark a trial.
	study, err := client.CreateStudy(ctx, "go-report-client-stop", quadraticSpec(Random))
	if err != nil {
		t.Fatal(err)
	}
	trials, err := study.Suggest(ctx, 2)
	if err != nil {
		t.Fatal(err)
	}
	first, second := trials[0].ID(), trials[1].ID()
	if r, err := study.Report(ctx, first, 0, 3.0, nil); err != nil || r.ShouldStop {
		t.Fatalf("a report without a stop reason: %v %v", r, err)
	}
	r, err := study.Report(ctx, first, 1, 2.5, nil, StopReason("loss plateaued"))
	if err != nil {
		t.Fatal(err)
	}
	if !r.ShouldStop || r.Reason != "client: loss plateaued" ||
		r.Trial.Proto().GetMetadata()["stop_reason"] != "client: loss plateaued" {
		t.Errorf("the client's stop: should_stop %v, reason %q, trial %v", r.ShouldStop, r.Reason, r.Trial)
	}
	if _, err := study.Report(ctx, second, 0, 1.0, nil, StopReason("")); err == nil ||
		!strings.Contains(err.Error(), "stop reason: empty") {
		t.Errorf("an empty stop reason: %v", err)
	}
	if _, err := study.Report(ctx, second, 0, 1.0, nil, StopReason(strings.Repeat("x", 1001))); Code(err) != codes.InvalidArgument ||
		!strings.Contains(err.Error(), "client_stop_reason") {
		t.Errorf("a stop reason of 1001 bytes: %v", err)
	}
	stopped, err := study.ObserveStopped(ctx, first)
	if err != nil {
		t.Fatal(err)
	}
	if v, _ := stopped.Value(); stopped.State() != Stopped || v != 2.5 || stopped.Proto().GetMetadata()["stop_step"] != "1" {
		t.Errorf("after ObserveStopped: %v", stopped)
	}
	// The second trial, refused above, takes reports and goes on without a stop reason.
	if r, err := study.Report(ctx, second, 0, 1.0, nil); err != nil || r.ShouldStop {
		t.Errorf("the second trial: %v %v", r, err)
	}
}

// loseResponses lets the first `times` calls of method reach the server, then replaces their
// responses by UNAVAILABLE (the server did the work; the client never heard). It records the
// methods and client ids it sees.
type loseResponses struct {
	mu        sync.Mutex
	method    string
	times     int
	calls     []string
	clientIDs []string
	tokens    []string
}

func (l *loseResponses) intercept(ctx context.Context, method string, req, reply interface{},
	cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	name := method[strings.LastIndex(method, "/")+1:]
	l.mu.Lock()
	l.calls = append(l.calls, name)
	if suggest, ok := req.(*pb.SuggestRequest); ok {
		l.clientIDs = append(l.clientIDs, suggest.ClientId)
	}
	if md, ok := metadata.FromOutgoingContext(ctx); ok {
		l.tokens = append(l.tokens, strings.Join(md.Get("authorization"), ","))
	}
	l.mu.Unlock()
	err := invoker(ctx, method, req, reply, cc, opts...)
	l.mu.Lock()
	defer l.mu.Unlock()
	if err == nil && name == l.method && l.times > 0 {
		l.times--
		return status.Error(codes.Unavailable, "injected: response lost")
	}
	return err
}

func (l *loseResponses) count(method string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, c := range l.calls {
		if c == method {
			n++
		}
	}
	return n
}

func TestSuggestRetriedWithTheSameClientIDGetsTheSameTrial(t *testing.T) {
	s := shared(t)
	ctx := testContext(t)
	lose := &loseResponses{method: "Suggest", times: 1}
	client := dial(t, s.addr, WithClientID("go-worker-1"), WithRetries(3, time.Millisecond, 10*time.Millisecond),
		WithDialOptions(grpc.WithUnaryInterceptor(lose.intercept)))
	study, err := client.CreateStudy(ctx, "go-lost-suggest", quadraticSpec(Random))
	if err != nil {
		t.Fatal(err)
	}
	trials, err := study.Suggest(ctx, 1)
	if err != nil || len(trials) != 1 {
		t.Fatalf("suggest: %v %v", trials, err)
	}
	if lose.count("Suggest") != 2 {
		t.Errorf("%d Suggest attempts, want 2", lose.count("Suggest"))
	}
	for _, id := range lose.clientIDs {
		if id != "go-worker-1" {
			t.Errorf("client id %q, want go-worker-1", id)
		}
	}
	all, err := study.Trials(ctx, 0)
	if err != nil || len(all) != 1 || all[0].ID() != trials[0].ID() {
		t.Fatalf("the lost attempt's trial was not handed back: %v %v", all, err)
	}
}

func TestObserveRetryAfterALostResponseSucceeds(t *testing.T) {
	s := shared(t)
	ctx := testContext(t)
	lose := &loseResponses{method: "Observe", times: 1}
	client := dial(t, s.addr, WithRetries(3, time.Millisecond, 10*time.Millisecond),
		WithDialOptions(grpc.WithUnaryInterceptor(lose.intercept)))
	study, err := client.CreateStudy(ctx, "go-lost-observe", quadraticSpec(Random))
	if err != nil {
		t.Fatal(err)
	}
	trials, err := study.Suggest(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	done, err := study.Observe(ctx, trials[0].ID(), 2.5)
	if err != nil || done.State() != Completed {
		t.Fatalf("observe: %v %v", done, err)
	}
	if lose.count("Observe") != 2 || lose.count("GetTrial") != 1 {
		t.Errorf("calls %v: want Observe twice, then GetTrial", lose.calls)
	}
	// A configuration is never retried: the lost response is the caller's error.
	lose.mu.Lock()
	lose.times = 1
	lose.mu.Unlock()
	_, err = study.ObserveConfiguration(ctx, Configuration{
		"model": {Params: Values{"x": 0.5, "n": 2, "kind": "b"}}}, Value(3))
	if Code(err) != codes.Unavailable {
		t.Fatalf("observe configuration: %v", err)
	}
}

func TestContextDeadlineBoundsTheRetries(t *testing.T) {
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := listener.Addr().String()
	listener.Close() // nothing listens there now
	client := dial(t, addr, WithTimeout(10*time.Second), WithRetries(50, 100*time.Millisecond, time.Second))
	ctx, cancel := context.WithTimeout(context.Background(), 700*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err = client.GetStudy(ctx, "x")
	if elapsed := time.Since(start); elapsed > 5*time.Second {
		t.Errorf("the call took %v beyond its 700 ms context", elapsed)
	}
	if c := Code(err); c != codes.DeadlineExceeded && c != codes.Unavailable {
		t.Errorf("code %v (%v), want DEADLINE_EXCEEDED or UNAVAILABLE", c, err)
	}
}

func TestTokensAuthenticateAndNamespaceStudies(t *testing.T) {
	tokens := filepath.Join(t.TempDir(), "tokens")
	if err := os.WriteFile(tokens, []byte("# owner:token\nalice:alice-token-0123456789\n"+
		"bob:bob-token-0123456789\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s := startServer(t, "--tokens="+tokens)
	ctx := testContext(t)
	anonymous := dial(t, s.addr)
	if _, err := anonymous.ListStudies(ctx); Code(err) != codes.Unauthenticated {
		t.Fatalf("anonymous: %v", err)
	}
	lose := &loseResponses{}
	alice := dial(t, s.addr, WithToken("alice-token-0123456789"),
		WithDialOptions(grpc.WithUnaryInterceptor(lose.intercept)))
	bob := dial(t, s.addr, WithToken("bob-token-0123456789"))
	study, err := alice.CreateStudy(ctx, "private", quadraticSpec(Random))
	if err != nil || study.Proto().Owner != "alice" {
		t.Fatalf("alice's study: %v %v", study, err)
	}
	if lose.tokens[0] != "Bearer alice-token-0123456789" {
		t.Errorf("authorization %q", lose.tokens[0])
	}
	if _, err := bob.GetStudy(ctx, "private"); Code(err) != codes.NotFound {
		t.Fatalf("bob sees alice's study: %v", err)
	}
	if _, err := Dial(ctx, s.addr, WithToken("two\nlines")); err == nil {
		t.Errorf("a token with a newline was accepted")
	}
}

// certificates writes a CA, a server certificate for 127.0.0.1 and a client certificate, as PEM
// files in dir.
func certificates(t *testing.T, dir string) {
	t.Helper()
	write := func(name, kind string, der []byte) {
		if err := os.WriteFile(filepath.Join(dir, name), pem.EncodeToMemory(&pem.Block{Type: kind, Bytes: der}), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	newKey := func() *ecdsa.PrivateKey {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		return key
	}
	now := time.Now()
	caKey := newKey()
	caTemplate := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "metaopt test CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour), IsCA: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature, BasicConstraintsValid: true}
	caDER, err := x509.CreateCertificate(rand.Reader, caTemplate, caTemplate, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(caDER)
	write("ca.pem", "CERTIFICATE", caDER)
	for i, name := range []string{"server", "client"} {
		key := newKey()
		template := &x509.Certificate{SerialNumber: big.NewInt(int64(i + 2)), Subject: pkix.Name{CommonName: name},
			NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
			KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}}
		if name == "server" {
			template.IPAddresses = []net.IP{net.ParseIP("127.0.0.1")}
			template.DNSNames = []string{"localhost"}
		}
		der, err := x509.CreateCertificate(rand.Reader, template, ca, &key.PublicKey, caKey)
		if err != nil {
			t.Fatal(err)
		}
		keyDER, err := x509.MarshalPKCS8PrivateKey(key)
		if err != nil {
			t.Fatal(err)
		}
		write(name+".pem", "CERTIFICATE", der)
		write(name+".key", "PRIVATE KEY", keyDER)
	}
}

func TestTLSAndMutualTLS(t *testing.T) {
	dir := t.TempDir()
	certificates(t, dir)
	path := func(name string) string { return filepath.Join(dir, name) }
	for _, mutual := range []bool{false, true} {
		t.Run(fmt.Sprintf("mutual=%v", mutual), func(t *testing.T) {
			args := []string{"--tls-cert=" + path("server.pem"), "--tls-key=" + path("server.key")}
			if mutual {
				args = append(args, "--tls-client-ca="+path("ca.pem"))
			}
			s := startServer(t, args...)
			ctx := testContext(t)
			cert, key := "", ""
			if mutual {
				cert, key = path("client.pem"), path("client.key")
			}
			secure := dial(t, s.addr, WithTLSFiles(path("ca.pem"), cert, key, ""))
			if _, err := secure.CreateStudy(ctx, "tls", quadraticSpec(Random)); err != nil {
				t.Fatalf("over TLS: %v", err)
			}
			short, cancel := context.WithTimeout(ctx, 3*time.Second)
			defer cancel()
			plain := dial(t, s.addr, WithRetries(1, 0, 0))
			if _, err := plain.GetStudy(short, "tls"); err == nil {
				t.Errorf("plaintext reached a TLS server")
			}
			if mutual {
				noCert := dial(t, s.addr, WithTLSFiles(path("ca.pem"), "", "", ""), WithRetries(1, 0, 0))
				if _, err := noCert.GetStudy(short, "tls"); err == nil {
					t.Errorf("a client without a certificate passed mutual TLS")
				}
			}
		})
	}
}

// The example program, run as its README says: `go run . --server HOST:PORT --trials N`.
func TestExampleCompletesAStudy(t *testing.T) {
	s := shared(t)
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command on PATH")
	}
	cmd := exec.Command(goTool, "run", ".", "--server", s.addr, "--trials", "8", "--study-id", "go-example")
	cmd.Dir = filepath.Join("examples", "ask_tell")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go run: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "study go-example (created, gp)") ||
		!regexp.MustCompile(`best: trial \d+ value [0-9.]+ after 8 trials`).Match(out) {
		t.Fatalf("unexpected output:\n%s", out)
	}
	ctx := testContext(t)
	study, err := dial(t, s.addr).GetStudy(ctx, "go-example")
	if err != nil {
		t.Fatal(err)
	}
	if done, err := study.Trials(ctx, Completed); err != nil || len(done) != 8 {
		t.Fatalf("completed trials: %d %v", len(done), err)
	}
}

// sheddingService is a fake OptimizerService that answers the first shed calls with code (a server
// shedding load), then GetStudy with the study asked for; it counts the calls by method.
type sheddingService struct {
	pb.UnimplementedOptimizerServiceServer
	mu    sync.Mutex
	shed  int
	code  codes.Code
	calls []string
}

func (s *sheddingService) answer(method string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls = append(s.calls, method)
	if s.shed > 0 {
		s.shed--
		return status.Error(s.code, "server overloaded")
	}
	return nil
}

func (s *sheddingService) GetStudy(_ context.Context, req *pb.GetStudyRequest) (*pb.GetStudyResponse, error) {
	if err := s.answer("GetStudy"); err != nil {
		return nil, err
	}
	return &pb.GetStudyResponse{Study: &pb.Study{StudyId: req.StudyId}}, nil
}

func (s *sheddingService) FineTune(context.Context, *pb.FineTuneRequest) (*pb.FineTuneResponse, error) {
	if err := s.answer("FineTune"); err != nil {
		return nil, err
	}
	return &pb.FineTuneResponse{}, nil
}

func (s *sheddingService) callList() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.calls...)
}

// serveShedding starts a sheddingService on 127.0.0.1 and dials it.
func serveShedding(t *testing.T, shed int, code codes.Code) (*sheddingService, *Client) {
	t.Helper()
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	service := &sheddingService{shed: shed, code: code}
	server := grpc.NewServer()
	pb.RegisterOptimizerServiceServer(server, service)
	go server.Serve(listener)
	t.Cleanup(server.Stop)
	return service, dial(t, listener.Addr().String(),
		WithRetries(3, time.Millisecond, 2*time.Millisecond))
}

func TestShedCallsAreRetriedWhenSafe(t *testing.T) {
	for _, code := range []codes.Code{codes.ResourceExhausted, codes.Unavailable} {
		t.Run(code.String(), func(t *testing.T) {
			service, c := serveShedding(t, 2, code)
			study, err := c.GetStudy(testContext(t), "s")
			if err != nil {
				t.Fatal(err)
			}
			if study.ID() != "s" {
				t.Errorf("study id %q, want s", study.ID())
			}
			if calls := service.callList(); len(calls) != 3 {
				t.Errorf("calls %v, want 3 GetStudy", calls)
			}
		})
	}
}

func TestShedRetriesEndAfterTheAttempts(t *testing.T) {
	service, c := serveShedding(t, 100, codes.ResourceExhausted)
	_, err := c.GetStudy(testContext(t), "s")
	if Code(err) != codes.ResourceExhausted {
		t.Fatalf("error %v, want RESOURCE_EXHAUSTED", err)
	}
	if calls := service.callList(); len(calls) != 3 {
		t.Errorf("calls %v, want 3 GetStudy", calls)
	}
}
