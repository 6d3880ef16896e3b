package admin

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// Client is a connection to a cluster for admin work: a kgo client, kadm on
// it, and what it learned about reaching the brokers (for error messages).
type Client struct {
	cfg   Config
	opts  []kgo.Opt // connection options, shared with the clients NewClient builds
	kgo   *kgo.Client
	adm   *kadm.Client
	dials *dialWatch
	seen  *answerLog
}

// Dial builds a client; it connects on its first request.
func Dial(cfg Config) (*Client, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	c := &Client{cfg: cfg, dials: newDialWatch(cfg.Brokers), seen: &answerLog{by: map[int16]kgo.BrokerMetadata{}}}
	opts, err := c.connOpts()
	if err != nil {
		return nil, err
	}
	c.opts = opts
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, err
	}
	c.kgo, c.adm = cl, kadm.NewClient(cl)
	c.adm.SetTimeoutMillis(int32(cfg.RequestTimeout.Milliseconds()))
	return c, nil
}

// Admin is the kadm client.
func (c *Client) Admin() *kadm.Client { return c.adm }

// Kgo is the underlying kgo client.
func (c *Client) Kgo() *kgo.Client { return c.kgo }

// Config is the configuration the client was built with.
func (c *Client) Config() Config { return c.cfg }

// NewClient builds another kgo client (a producer, a consumer) reaching the
// cluster the same way, with opts added.
func (c *Client) NewClient(opts ...kgo.Opt) (*kgo.Client, error) {
	return kgo.NewClient(append(append([]kgo.Opt{}, c.opts...), opts...)...)
}

// Close closes the client.
func (c *Client) Close() { c.kgo.Close() }

// Watch returns a context that also ends, with an *UnreachableError as its
// cause, once every seed broker has refused two dials in a row while it
// lives: kgo would otherwise retry dials until the deadline. A long-lived
// client (the console) is not condemned by one outage: each watch judges
// only the dials made during it.
func (c *Client) Watch(parent context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancelCause(parent)
	unwatch := c.dials.watch(cancel)
	return ctx, func() { unwatch(); cancel(context.Canceled) }
}

func (c *Client) connOpts() ([]kgo.Opt, error) {
	opts := []kgo.Opt{
		kgo.SeedBrokers(c.cfg.Brokers...),
		kgo.ClientID(c.cfg.ClientID),
		kgo.RetryTimeout(c.cfg.RequestTimeout),
		kgo.WithHooks(c.seen),
	}
	var tlsCfg *tls.Config
	if c.cfg.TLS() {
		var err error
		if tlsCfg, err = c.tlsConfig(); err != nil {
			return nil, err
		}
	}
	opts = append(opts, kgo.Dialer(c.dials.dialer(tlsCfg)))
	if mech := c.saslMechanism(); mech != nil {
		opts = append(opts, kgo.SASL(mech))
	}
	return opts, nil
}

func (c *Client) tlsConfig() (*tls.Config, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if c.cfg.RootCAs != nil {
		cfg.RootCAs = c.cfg.RootCAs.Clone()
	}
	if c.cfg.CAFile != "" {
		pem, err := os.ReadFile(c.cfg.CAFile)
		if err != nil {
			return nil, fmt.Errorf("ssl.ca.location: %w", err)
		}
		if cfg.RootCAs == nil {
			cfg.RootCAs = x509.NewCertPool()
		}
		if !cfg.RootCAs.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("ssl.ca.location=%s holds no PEM certificate", c.cfg.CAFile)
		}
	}
	if c.cfg.CertFile != "" {
		cert, err := tls.LoadX509KeyPair(c.cfg.CertFile, c.cfg.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("ssl.certificate.location/ssl.key.location: %w", err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	if !c.cfg.VerifyHostname {
		// Kafka's empty endpoint identification algorithm: the chain is
		// still verified, the host name is not.
		cfg.InsecureSkipVerify = true
		cfg.VerifyConnection = func(cs tls.ConnectionState) error { return verifyChain(cs, cfg.RootCAs) }
	}
	return cfg, nil
}

func verifyChain(cs tls.ConnectionState, roots *x509.CertPool) error {
	if len(cs.PeerCertificates) == 0 {
		return fmt.Errorf("the broker sent no certificate")
	}
	inter := x509.NewCertPool()
	for _, c := range cs.PeerCertificates[1:] {
		inter.AddCert(c)
	}
	_, err := cs.PeerCertificates[0].Verify(x509.VerifyOptions{Roots: roots, Intermediates: inter})
	return err
}

// saslMechanism is franz-go's mechanism for sasl.mechanism, nil without SASL.
func (c *Client) saslMechanism() sasl.Mechanism {
	if !strings.HasPrefix(c.cfg.SecurityProtocol, "SASL_") {
		return nil
	}
	switch c.cfg.SASLMechanism {
	case "PLAIN":
		return plain.Auth{User: c.cfg.SASLUsername, Pass: c.cfg.SASLPassword}.AsMechanism()
	case "SCRAM-SHA-256":
		return scram.Auth{User: c.cfg.SASLUsername, Pass: c.cfg.SASLPassword}.AsSha256Mechanism()
	case "SCRAM-SHA-512":
		return scram.Auth{User: c.cfg.SASLUsername, Pass: c.cfg.SASLPassword}.AsSha512Mechanism()
	}
	return nil
}

// dialWatch dials brokers for kgo and notices when no seed can be reached.
type dialWatch struct {
	seeds []string

	mu        sync.Mutex     // guards the following
	connected bool           // some dial ever succeeded
	failures  map[string]int // failed dials in a row per address, since the last success
	lastErr   map[string]error
	watchers  map[int]context.CancelCauseFunc // Watch contexts to end when unreachable
	nextID    int
}

func newDialWatch(seeds []string) *dialWatch {
	return &dialWatch{seeds: seeds, failures: map[string]int{}, lastErr: map[string]error{},
		watchers: map[int]context.CancelCauseFunc{}}
}

// watch registers cancel to be called when the seeds turn out unreachable.
func (w *dialWatch) watch(cancel context.CancelCauseFunc) (unwatch func()) {
	w.mu.Lock()
	defer w.mu.Unlock()
	id := w.nextID
	w.nextID++
	w.watchers[id] = cancel
	return func() {
		w.mu.Lock()
		delete(w.watchers, id)
		w.mu.Unlock()
	}
}

func (w *dialWatch) dialer(tlsCfg *tls.Config) func(ctx context.Context, network, host string) (net.Conn, error) {
	d := &net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}
	return func(ctx context.Context, network, host string) (net.Conn, error) {
		var conn net.Conn
		var err error
		if tlsCfg != nil {
			cfg := tlsCfg.Clone()
			if cfg.ServerName == "" {
				cfg.ServerName, _, _ = net.SplitHostPort(host)
			}
			conn, err = (&tls.Dialer{NetDialer: d, Config: cfg}).DialContext(ctx, network, host)
		} else {
			conn, err = d.DialContext(ctx, network, host)
		}
		w.record(host, err)
		return conn, err
	}
}

// record notes one dial. Every seed failing twice in a row, with no dial
// working in between, means the cluster is unreachable from here: the
// current watchers end and the count starts over.
func (w *dialWatch) record(host string, err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err == nil {
		w.connected = true
		clear(w.failures)
		return
	}
	w.failures[host]++
	w.lastErr[host] = err
	for _, s := range w.seeds {
		if w.failures[s] < 2 {
			return
		}
	}
	for id, cancel := range w.watchers {
		cancel(&UnreachableError{Brokers: w.seeds, Err: err})
		delete(w.watchers, id)
	}
	clear(w.failures)
}

func (w *dialWatch) everConnected() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.connected
}

// lastDialError returns a recent dial failure, if any.
func (w *dialWatch) lastDialError() (string, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for host, err := range w.lastErr {
		return host, err
	}
	return "", nil
}

// answerLog remembers which broker last answered each request key, so that
// an error code can name the broker that sent it.
type answerLog struct {
	mu sync.Mutex // guards by
	by map[int16]kgo.BrokerMetadata
}

// OnBrokerE2E implements kgo.HookBrokerE2E.
func (l *answerLog) OnBrokerE2E(meta kgo.BrokerMetadata, key int16, e2e kgo.BrokerE2E) {
	if e2e.Err() != nil {
		return
	}
	l.mu.Lock()
	l.by[key] = meta
	l.mu.Unlock()
}

func (l *answerLog) last(key int16) (kgo.BrokerMetadata, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	m, ok := l.by[key]
	return m, ok
}
