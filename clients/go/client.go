package metaopt

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"math/rand"
	"os"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"

	pb "github.com/metaopt/metaopt/clients/go/metaoptv1"
)

// maxClientID is the server's limit on client_id (bytes).
const maxClientID = 128

// Client is a connection to a metaopt server. It is safe for concurrent use; workers that
// evaluate trials in parallel should each use their own client id (WithClientID, or
// Study.SuggestAs).
type Client struct {
	conn     *grpc.ClientConn
	stub     pb.OptimizerServiceClient
	token    string
	clientID string
	timeout  time.Duration
	attempts int
	backoff  time.Duration
	maxWait  time.Duration

	randMu sync.Mutex
	rand   *rand.Rand
}

type options struct {
	token       string
	tlsConfig   *tls.Config
	tlsErr      error
	clientID    string
	timeout     time.Duration
	attempts    int
	backoff     time.Duration
	maxBackoff  time.Duration
	dialOptions []grpc.DialOption
	block       bool
}

// Option configures Dial.
type Option func(*options)

// WithToken sends "authorization: Bearer <token>" with every call (servers run with --tokens).
func WithToken(token string) Option { return func(o *options) { o.token = token } }

// WithTLS connects with TLS configured by cfg (nil: the system's root certificates).
func WithTLS(cfg *tls.Config) Option {
	return func(o *options) {
		if cfg == nil {
			cfg = &tls.Config{}
		}
		o.tlsConfig = cfg.Clone()
	}
}

// WithTLSFiles connects with TLS, trusting the CA certificate in caFile (PEM; empty: the system's
// roots) and, for mutual TLS, presenting the certificate and key in certFile and keyFile (both or
// neither). serverName, when not empty, is the name checked against the server's certificate.
func WithTLSFiles(caFile, certFile, keyFile, serverName string) Option {
	return func(o *options) {
		cfg := &tls.Config{ServerName: serverName, MinVersion: tls.VersionTLS12}
		if caFile != "" {
			pem, err := os.ReadFile(caFile)
			if err != nil {
				o.tlsErr = fmt.Errorf("metaopt: CA certificate: %w", err)
				return
			}
			pool := x509.NewCertPool()
			if !pool.AppendCertsFromPEM(pem) {
				o.tlsErr = fmt.Errorf("metaopt: CA certificate %s: no PEM certificate in it", caFile)
				return
			}
			cfg.RootCAs = pool
		}
		if (certFile == "") != (keyFile == "") {
			o.tlsErr = errors.New("metaopt: client certificate and key: give both for mutual TLS, or neither")
			return
		}
		if certFile != "" {
			pair, err := tls.LoadX509KeyPair(certFile, keyFile)
			if err != nil {
				o.tlsErr = fmt.Errorf("metaopt: client certificate: %w", err)
				return
			}
			cfg.Certificates = []tls.Certificate{pair}
		}
		o.tlsConfig = cfg
	}
}

// WithClientID sets the worker id sent with Suggest (default: host-pid-random, fixed for the
// life of the Client). The server hands a client id its ACTIVE trials back first, so a retry or a
// restarted worker with the same id gets the same trials.
func WithClientID(id string) Option { return func(o *options) { o.clientID = id } }

// WithTimeout sets the deadline of each attempt of a call (default 30 s). The context's deadline,
// if earlier, still bounds the whole call.
func WithTimeout(d time.Duration) Option { return func(o *options) { o.timeout = d } }

// WithRetries sets the attempts of a retryable call (1: no retries; default 5) and the backoff
// before the second attempt, doubled for each further one up to maxBackoff (defaults 200 ms and
// 5 s); each wait is drawn from [backoff/2, backoff].
func WithRetries(attempts int, backoff, maxBackoff time.Duration) Option {
	return func(o *options) { o.attempts, o.backoff, o.maxBackoff = attempts, backoff, maxBackoff }
}

// WithDialOptions adds gRPC dial options (interceptors, keepalive, ...).
func WithDialOptions(opts ...grpc.DialOption) Option {
	return func(o *options) { o.dialOptions = append(o.dialOptions, opts...) }
}

// WithBlock makes Dial wait, within its context, until the connection is up.
func WithBlock() Option { return func(o *options) { o.block = true } }

// DefaultClientID is host-pid-random: unique per process.
func DefaultClientID() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "host"
	}
	if len(host) > 80 {
		host = host[:80]
	}
	return fmt.Sprintf("%s-%d-%08x", host, os.Getpid(), rand.New(rand.NewSource(time.Now().UnixNano())).Uint32())
}

// Dial connects to the server at target ("host:port" or any gRPC target). Without WithBlock the
// connection is made in the background and Dial returns at once.
func Dial(ctx context.Context, target string, opts ...Option) (*Client, error) {
	o := options{timeout: 30 * time.Second, attempts: 5, backoff: 200 * time.Millisecond,
		maxBackoff: 5 * time.Second}
	for _, opt := range opts {
		opt(&o)
	}
	switch {
	case target == "":
		return nil, errors.New("metaopt: target: empty; give host:port")
	case o.tlsErr != nil:
		return nil, o.tlsErr
	case o.timeout <= 0:
		return nil, fmt.Errorf("metaopt: timeout: %v must be > 0", o.timeout)
	case o.attempts < 1:
		return nil, fmt.Errorf("metaopt: retries: %d attempts, need >= 1", o.attempts)
	case o.backoff < 0 || o.backoff > o.maxBackoff:
		return nil, fmt.Errorf("metaopt: retries: need 0 <= backoff %v <= max backoff %v", o.backoff, o.maxBackoff)
	case o.token != "" && strings.ContainsAny(o.token, "\r\n"):
		return nil, errors.New("metaopt: token: must be on one line")
	case len(o.clientID) > maxClientID:
		return nil, fmt.Errorf("metaopt: client id %q: more than %d bytes", o.clientID, maxClientID)
	}
	if o.clientID == "" {
		o.clientID = DefaultClientID()
	}
	dialOptions := []grpc.DialOption{}
	if o.tlsConfig != nil {
		dialOptions = append(dialOptions, grpc.WithTransportCredentials(credentials.NewTLS(o.tlsConfig)))
	} else {
		dialOptions = append(dialOptions, grpc.WithInsecure())
	}
	if o.block {
		dialOptions = append(dialOptions, grpc.WithBlock())
	}
	dialOptions = append(dialOptions, o.dialOptions...)
	conn, err := grpc.DialContext(ctx, target, dialOptions...)
	if err != nil {
		return nil, fmt.Errorf("metaopt: dial %s: %w", target, err)
	}
	return &Client{
		conn: conn, stub: pb.NewOptimizerServiceClient(conn), token: o.token,
		clientID: o.clientID, timeout: o.timeout, attempts: o.attempts, backoff: o.backoff,
		maxWait: o.maxBackoff, rand: rand.New(rand.NewSource(time.Now().UnixNano())),
	}, nil
}

// Close closes the connection; later calls fail.
func (c *Client) Close() error { return c.conn.Close() }

// ClientID is the worker id the client sends with Suggest.
func (c *Client) ClientID() string { return c.clientID }

// Stub is the generated service client on the same connection, for calls this package does not
// wrap (without retries or the token: add them to the context yourself).
func (c *Client) Stub() pb.OptimizerServiceClient { return c.stub }

// retryPolicy says which codes a call retries and how to recognise that a lost attempt had
// succeeded.
type retryPolicy struct {
	codes []codes.Code
	// recover, called with the error of an attempt after a retried one, returns true when the
	// call is known to have succeeded (the result is then in the caller's closure).
	recover func(ctx context.Context, err *Error) bool
}

var (
	// RESOURCE_EXHAUSTED: a server (or a proxy in front of it) shed the call without running it.
	retrySafe = retryPolicy{codes: []codes.Code{codes.Unavailable, codes.ResourceExhausted,
		codes.DeadlineExceeded}}
	retrySafeAborted = retryPolicy{codes: []codes.Code{codes.Unavailable, codes.ResourceExhausted,
		codes.DeadlineExceeded, codes.Aborted}}
	noRetry = retryPolicy{}
)

func (p retryPolicy) retries(code codes.Code) bool {
	for _, c := range p.codes {
		if c == code {
			return true
		}
	}
	return false
}

// call runs one attempt of fn per try, each under the per-attempt timeout, until it succeeds, a
// code the policy does not retry comes back, the attempts run out or ctx ends.
func (c *Client) call(ctx context.Context, method string, policy retryPolicy,
	fn func(ctx context.Context, opts ...grpc.CallOption) error) error {
	if c.token != "" {
		ctx = metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+c.token)
	}
	backoff := c.backoff
	retried := false
	for attempt := 1; ; attempt++ {
		attemptCtx, cancel := context.WithTimeout(ctx, c.timeout)
		var callOptions []grpc.CallOption
		if retried {
			// A retry waits (within its deadline) for the connection to come back rather than
			// failing at once while the channel reconnects.
			callOptions = append(callOptions, grpc.WaitForReady(true))
		}
		err := fn(attemptCtx, callOptions...)
		cancel()
		if err == nil {
			return nil
		}
		e := rpcError(err, method)
		if ctx.Err() != nil {
			// The caller's deadline or cancellation, not the attempt's: never retried.
			return e
		}
		if retried && policy.recover != nil && policy.recover(ctx, e) {
			return nil
		}
		if !policy.retries(e.Code) || attempt >= c.attempts {
			return e
		}
		c.randMu.Lock()
		wait := backoff/2 + time.Duration(c.rand.Int63n(int64(backoff/2)+1))
		c.randMu.Unlock()
		timer := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			timer.Stop()
			return e
		case <-timer.C:
		}
		backoff *= 2
		if backoff > c.maxWait {
			backoff = c.maxWait
		}
		retried = true
	}
}
