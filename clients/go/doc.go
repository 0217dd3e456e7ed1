// Package metaopt is the Go client of metaopt, the ask/tell Bayesian-optimization service
// (metaopt.v1.OptimizerService).
//
//	client, err := metaopt.Dial(ctx, "localhost:50051")
//	if err != nil { ... }
//	defer client.Close()
//	space := metaopt.FlatSpace(metaopt.Float("x", -5, 5), metaopt.Int("n", 1, 10))
//	study, err := client.CreateStudy(ctx, "quadratic", metaopt.Spec{
//		Space: space, Objective: "loss", Goal: metaopt.Minimize, Algorithm: metaopt.GP})
//	for i := 0; i < 20; i++ {
//		trials, err := study.Suggest(ctx, 1) // ask
//		...
//		x, _ := trials[0].Float("x")
//		n, _ := trials[0].Int("n")
//		_, err = study.Observe(ctx, trials[0].ID(), (x-1)*(x-1)+float64(n)) // tell
//	}
//
// Every call takes a context: its deadline bounds the whole call, retries included, and each
// attempt also has the client's per-attempt timeout (WithTimeout). Calls that are safe to repeat
// are retried on UNAVAILABLE, RESOURCE_EXHAUSTED (a server or proxy shedding load) and
// DEADLINE_EXCEEDED with exponential backoff and jitter: reads,
// CreateStudy (create-or-get), DeleteStudy, Heartbeat, Suggest (always sent with the client's
// client_id, so a retry gets the trials a lost attempt created instead of new ones) and Observe
// of a trial (a retry that finds the trial already holding the same outcome succeeds). Observe of
// a configuration is never retried.
//
// Errors from the server are *Error values; status.Code(err) and errors.As work on them.
//
// The generated messages and service stubs are in the subpackage metaoptv1. They are generated
// from proto/ by `go generate` (generate.sh) and are not committed.
package metaopt

//go:generate bash generate.sh . ../../proto
