// Command ask_tell runs a whole study against a metaopt server: it minimizes the Branin function
// (a standard two-dimensional test function; its minimum 0.397887 is reached at three points)
// plus a categorical penalty, asking for one trial at a time and telling its value.
//
//	go run . --server localhost:50051 --trials 30
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math"
	"os"
	"strings"
	"time"

	metaopt "github.com/metaopt/metaopt/clients/go"
)

// branin is the Branin-Hoo function on x1 in [-5, 10], x2 in [0, 15].
func branin(x1, x2 float64) float64 {
	const (
		a = 1.0
		r = 6.0
		s = 10.0
	)
	b := 5.1 / (4 * math.Pi * math.Pi)
	c := 5 / math.Pi
	t := 1 / (8 * math.Pi)
	return a*math.Pow(x2-b*x1*x1+c*x1-r, 2) + s*(1-t)*math.Cos(x1) + s
}

var algorithms = map[string]metaopt.AlgorithmKind{
	"random": metaopt.Random, "gp": metaopt.GP, "deeppipe": metaopt.DeepPipe, "mosaic": metaopt.Mosaic,
}

func run() error {
	server := flag.String("server", "localhost:50051", "metaopt server (host:port)")
	trials := flag.Int("trials", 20, "trials to evaluate")
	studyID := flag.String("study-id", "branin-go", "study id (an existing study with the same spec is continued)")
	algorithm := flag.String("algorithm", "gp", "random, gp, deeppipe or mosaic")
	seed := flag.Uint64("seed", 1, "the study's random seed")
	token := flag.String("token", os.Getenv("METAOPT_TOKEN"), "bearer token (default $METAOPT_TOKEN)")
	ca := flag.String("tls-ca", "", "CA certificate (PEM) of the server's certificate; enables TLS")
	cert := flag.String("tls-cert", "", "client certificate (PEM) for mutual TLS")
	key := flag.String("tls-key", "", "client key (PEM) for mutual TLS")
	timeout := flag.Duration("timeout", 2*time.Minute, "deadline of the whole run")
	flag.Parse()

	kind, ok := algorithms[*algorithm]
	if !ok {
		return fmt.Errorf("--algorithm %q: not one of random, gp, deeppipe, mosaic", *algorithm)
	}
	if *trials < 1 {
		return fmt.Errorf("--trials %d: must be >= 1", *trials)
	}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()

	options := []metaopt.Option{}
	if *token != "" {
		options = append(options, metaopt.WithToken(*token))
	}
	if *ca != "" || *cert != "" {
		options = append(options, metaopt.WithTLSFiles(*ca, *cert, *key, ""))
	}
	client, err := metaopt.Dial(ctx, *server, options...)
	if err != nil {
		return err
	}
	defer client.Close()

	space := metaopt.FlatSpace(
		metaopt.Float("x1", -5, 10),
		metaopt.Float("x2", 0, 15),
		metaopt.Categorical("shift", "none", "small", "large"),
	)
	study, err := client.CreateStudy(ctx, *studyID, metaopt.Spec{
		Space: space, Objective: "branin", Goal: metaopt.Minimize, Algorithm: kind, Seed: *seed})
	if err != nil {
		return err
	}
	state := "existing"
	if study.Created {
		state = "created"
	}
	fmt.Printf("study %s (%s, %s)\n", study.ID(), state, strings.ToLower(strings.TrimPrefix(kind.String(), "ALGORITHM_KIND_")))

	penalty := map[string]float64{"none": 0, "small": 1, "large": 10}
	for i := 0; i < *trials; i++ {
		suggested, err := study.Suggest(ctx, 1) // ask
		if err != nil {
			return err
		}
		if len(suggested) == 0 {
			return errors.New("the server suggested no trial")
		}
		trial := suggested[0]
		x1, err := trial.Float("x1")
		if err != nil {
			return err
		}
		x2, err := trial.Float("x2")
		if err != nil {
			return err
		}
		shift, err := trial.Category("shift")
		if err != nil {
			return err
		}
		value := branin(x1, x2) + penalty[shift]
		if _, err := study.Observe(ctx, trial.ID(), value); err != nil { // tell
			return err
		}
		fmt.Printf("trial %d: x1=%.3f x2=%.3f shift=%s -> %.4f (%s)\n",
			trial.ID(), x1, x2, shift, value, trial.Metadata()["policy"])
	}
	best, err := study.BestTrial(ctx)
	if err != nil {
		return err
	}
	if best == nil {
		return errors.New("no completed trial")
	}
	value, _ := best.Value()
	if err := study.Refresh(ctx); err != nil {
		return err
	}
	fmt.Printf("best: trial %d value %.4f after %d trials\n", best.ID(), value, study.TrialCount())
	return nil
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "ask_tell:", err)
		os.Exit(1)
	}
}
