package main

// The secured kbroker target and the SCRAM connection measure (issue 15).
//
// kbroker-sasl-ssl is a kbroker cluster whose clients connect over
// SASL_SSL with SCRAM-SHA-512 and whose brokers replicate over SASL_SSL as
// well (the inter-broker listener), with the StandardAuthorizer on: what a
// secured production cluster pays. Certificates come from `kbroker
// dev-certs`, the SCRAM credentials from `kbroker format --add-scram`. Each
// broker also has a PLAINTEXT listener for the suite's own topic and
// readiness checks, which the load never uses.
//
// scram-conns sets up --scram-conns SCRAM-SHA-512 connections over
// SASL_SSL, --scram-concurrency at a time, against one such broker: TCP,
// TLS handshake, ApiVersions, SaslHandshake and the two SaslAuthenticate
// rounds, the client's PBKDF2 included (this machine runs both sides).

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

const (
	benchUser     = "kbench"
	benchPassword = "kbench-secret"
)

// startSecureKbroker starts o.brokers secured kbroker nodes.
func startSecureKbroker(ctx context.Context, o startOpts) (*cluster, error) {
	certs := filepath.Join(o.dir, "certs")
	if out, err := exec.Command(o.kbroker, "dev-certs", "--dir", certs, "--brokers", "broker", "--clients", "kbench").CombinedOutput(); err != nil {
		return nil, fmt.Errorf("kbroker dev-certs: %v: %s", err, out)
	}
	tlsCfg, err := benchTLS(certs)
	if err != nil {
		return nil, err
	}
	ports, err := freePorts(4 * o.brokers)
	if err != nil {
		return nil, err
	}
	var voters []string
	for i := range o.brokers {
		voters = append(voters, fmt.Sprintf("%d@127.0.0.1:%d", i+1, ports[4*i+1]))
	}
	c := &cluster{kind: o.kind, dir: o.dir,
		loadOpts: []kgo.Opt{kgo.DialTLSConfig(tlsCfg), kgo.SASL(scram.Auth{User: benchUser, Pass: benchPassword}.AsSha512Mechanism())}}
	for i := range o.brokers {
		port := func(k int) string { return fmt.Sprintf("127.0.0.1:%d", ports[4*i+k]) }
		dataDir := filepath.Join(o.dir, fmt.Sprintf("node-%d", i+1))
		if out, err := exec.Command(o.kbroker, "format", "--log.dirs="+dataDir,
			"--add-scram", "SCRAM-SHA-512=[name="+benchUser+",password="+benchPassword+"]").CombinedOutput(); err != nil {
			c.stop()
			return nil, fmt.Errorf("kbroker format: %v: %s", err, out)
		}
		args := append(secureArgs(i+1, port, strings.Join(voters, ","), dataDir, certs), o.flags...)
		cmd := exec.Command(o.kbroker, args...)
		cmd.Env = withoutKbrokerEnv()
		if err := c.launchLogged(cmd, i); err != nil {
			c.stop()
			return nil, err
		}
		c.addrs, c.loadAddrs = append(c.addrs, port(0)), append(c.loadAddrs, port(2))
	}
	if err := waitServing(ctx, c, 90*time.Second); err != nil {
		c.stop()
		return nil, fmt.Errorf("%w (logs in %s)", err, o.dir)
	}
	return c, nil
}

// secureArgs is node id's command line: PLAINTEXT (the suite's checks),
// CONTROLLER, SASL_SSL (clients) and INTERNAL (SASL_SSL between brokers).
func secureArgs(id int, port func(int) string, voters, dataDir, certs string) []string {
	jaas := fmt.Sprintf(`org.apache.kafka.common.security.scram.ScramLoginModule required username="%s" password="%s";`, benchUser, benchPassword)
	return []string{
		"serve",
		fmt.Sprintf("--node.id=%d", id),
		fmt.Sprintf("--listeners=PLAINTEXT://%s,CONTROLLER://%s,SASL_SSL://%s,INTERNAL://%s", port(0), port(1), port(2), port(3)),
		"--listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT,SASL_SSL:SASL_SSL,INTERNAL:SASL_SSL",
		"--inter.broker.listener.name=INTERNAL",
		"--sasl.mechanism.inter.broker.protocol=SCRAM-SHA-512",
		"--controller.listener.names=CONTROLLER",
		"--controller.quorum.voters=" + voters,
		"--authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer",
		"--super.users=User:" + benchUser + ";User:ANONYMOUS",
		"--override", "sasl.enabled.mechanisms=SCRAM-SHA-512",
		"--override", "ssl.keystore.type=PEM",
		"--override", "ssl.keystore.location=" + filepath.Join(certs, "broker.keystore.pem"),
		"--override", "ssl.truststore.type=PEM",
		"--override", "ssl.truststore.location=" + filepath.Join(certs, "ca.pem"),
		"--override", "listener.name.internal.scram-sha-512.sasl.jaas.config=" + jaas,
		"--log.dirs=" + dataDir,
		"--metrics.listen=",
		"--log.level=warn",
	}
}

func benchTLS(certs string) (*tls.Config, error) {
	pem, err := os.ReadFile(filepath.Join(certs, "ca.pem"))
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pem)
	return &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}, nil
}

// scramResult is the SCRAM connection measure.
type scramResult struct {
	Conns, Concurrency int
	Wall               time.Duration
	P50, P99           time.Duration
}

func (s *suite) scramConnections(ctx context.Context) error {
	dir := filepath.Join(s.cfg.Out, "runs", "scram-conns")
	os.RemoveAll(dir)
	c, err := s.start(ctx, startOpts{kind: kindKbrokerSASLSSL, brokers: 1, dir: dir, kbroker: s.cfg.Kbroker})
	if err != nil {
		return err
	}
	defer func() { c.stop(); os.RemoveAll(dir) }()
	tlsCfg, err := benchTLS(filepath.Join(dir, "certs"))
	if err != nil {
		return err
	}
	mech := scram.Auth{User: benchUser, Pass: benchPassword}.AsSha512Mechanism()
	res, err := setUpSCRAMConns(ctx, c.loadAddrs[0], tlsCfg, mech, s.cfg.ScramConns, s.cfg.ScramConcurrency)
	if err != nil {
		return err
	}
	verdict := "met"
	if res.Wall >= 10*time.Second*time.Duration(res.Conns)/1000 {
		verdict = "MISSED"
	}
	fmt.Fprintf(s.out, "\n## Issue 15: SCRAM connection setup\n\n")
	fmt.Fprintf(s.out, "- %d SCRAM-SHA-512 connections over SASL_SSL (TCP, TLS, ApiVersions, SaslHandshake, SaslAuthenticate x2; the client's PBKDF2 on the same machine), %d at a time: **%.2f s** (%.0f connections/s), each p50 %v, p99 %v; goal 1,000 in < 10 s: %s\n",
		res.Conns, res.Concurrency, res.Wall.Seconds(), float64(res.Conns)/res.Wall.Seconds(),
		res.P50.Round(10*time.Microsecond), res.P99.Round(10*time.Microsecond), verdict)
	return nil
}

// setUpSCRAMConns sets up n authenticated connections to addr, conc at a
// time, closing each once it is authenticated.
func setUpSCRAMConns(ctx context.Context, addr string, tlsCfg *tls.Config, mech sasl.Mechanism, n, conc int) (scramResult, error) {
	res := scramResult{Conns: n, Concurrency: max(conc, 1)}
	durs := make([]time.Duration, n)
	next := make(chan int)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var firstErr error
	start := time.Now()
	for range res.Concurrency {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				t0 := time.Now()
				err := scramConn(ctx, addr, tlsCfg, mech)
				durs[i] = time.Since(t0)
				if err != nil {
					mu.Lock()
					firstErr = cmpOr(firstErr, fmt.Errorf("connection %d: %w", i, err))
					mu.Unlock()
				}
			}
		}()
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	res.Wall = time.Since(start)
	slices.Sort(durs)
	if n > 0 {
		res.P50, res.P99 = durs[n/2], durs[min(n-1, n*99/100)]
	}
	return res, firstErr
}

func cmpOr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

// scramConn sets up one SASL_SSL connection authenticated with mech.
func scramConn(ctx context.Context, addr string, tlsCfg *tls.Config, mech sasl.Mechanism) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	d := tls.Dialer{NetDialer: &net.Dialer{}, Config: tlsCfg.Clone()}
	nc, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return err
	}
	rc, err := handshakeRaw(ctx, nc)
	if err != nil {
		nc.Close()
		return err
	}
	defer rc.Close()
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.Version, hs.Mechanism = 1, mech.Name()
	hsResp := kmsg.NewPtrSASLHandshakeResponse()
	if err := rc.do(ctx, hs, hsResp); err != nil {
		return err
	}
	if err := kerr.ErrorForCode(hsResp.ErrorCode); err != nil {
		return fmt.Errorf("SaslHandshake: %w", err)
	}
	sess, msg, err := mech.Authenticate(ctx, addr)
	if err != nil {
		return err
	}
	for done := false; !done; {
		auth := kmsg.NewPtrSASLAuthenticateRequest()
		auth.Version, auth.SASLAuthBytes = 1, msg
		resp := kmsg.NewPtrSASLAuthenticateResponse()
		if err := rc.do(ctx, auth, resp); err != nil {
			return err
		}
		if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
			return fmt.Errorf("SaslAuthenticate: %w", err)
		}
		if done, msg, err = sess.Challenge(resp.SASLAuthBytes); err != nil {
			return err
		}
	}
	return nil
}
