package compat

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/kbroker/kbroker/internal/testsupport"
)

// A secured cluster as a Kafka operator would set one up: every broker
// has
//
//	SASL_SSL        clients (node.clientAddr): PLAIN, SCRAM-SHA-256/512, OAUTHBEARER
//	SSL             clients with certificates (ssl.client.auth=required)
//	SASL_PLAINTEXT  clients without TLS: PLAIN, SCRAM, OAUTHBEARER
//	INTERNAL        SASL_SSL between brokers, SCRAM-SHA-512 as user broker
//	CONTROLLER      SSL with client certificates (principal User:broker)
//
// with the StandardAuthorizer, super.users=User:admin;User:broker, PLAIN
// users admin, alice and bob, and the SCRAM credentials of admin and
// broker stored with `kbroker format --add-scram` before the first start.
// Certificates come from `kbroker dev-certs`.

// Passwords of the secured cluster's users.
const (
	adminPassword = "admin-secret"
	alicePassword = "alice-secret"
	bobPassword   = "bob-secret"
)

type secureOpts struct {
	brokers int
	// properties are added to every node's server.properties.
	properties []string
}

// secureNode is one node's addresses beyond node.clientAddr (SASL_SSL).
type secureNode struct {
	*node
	sslAddr, saslPlainAddr, internalAddr string
	config                               string // its server.properties
}

type secureCluster struct {
	*cluster
	t     *testing.T
	certs string // the dev-certs directory
	nodes []*secureNode
}

// devCerts runs `kbroker dev-certs` into dir.
func devCerts(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command(kbrokerBin, append([]string{"dev-certs", "--dir", dir, "--brokers", "broker",
		"--clients", "admin,alice"}, args...)...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("kbroker dev-certs: %v\n%s", err, out)
	}
	return string(out)
}

// startSecureCluster starts opts.brokers secured nodes (combined mode) and
// waits until each serves on its SASL_SSL listener.
func startSecureCluster(t *testing.T, opts secureOpts) *secureCluster {
	t.Helper()
	needOwnCluster(t)
	if opts.brokers == 0 {
		opts.brokers = 1
	}
	base := t.TempDir()
	sc := &secureCluster{t: t, certs: filepath.Join(base, "certs"), cluster: &cluster{t: t}}
	devCerts(t, sc.certs)
	ports := testsupport.FreePorts(t, 5*opts.brokers)
	var voters []string
	for i := range opts.brokers {
		voters = append(voters, fmt.Sprintf("%d@127.0.0.1:%d", i+1, ports[5*i+4]))
	}
	for i := range opts.brokers {
		addr := func(k int) string { return fmt.Sprintf("127.0.0.1:%d", ports[5*i+k]) }
		n := &secureNode{node: &node{t: t, id: int32(i + 1), clientAddr: addr(0), ctrlAddr: addr(4),
			dataDir: filepath.Join(base, fmt.Sprintf("node-%d", i+1))},
			sslAddr: addr(1), saslPlainAddr: addr(2), internalAddr: addr(3)}
		n.config = filepath.Join(base, fmt.Sprintf("node-%d.properties", i+1))
		props := sc.properties(n, strings.Join(voters, ","), opts.properties)
		if err := os.WriteFile(n.config, []byte(strings.Join(props, "\n")+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		sc.format(n)
		n.args = []string{"serve", "--config", n.config}
		sc.nodes = append(sc.nodes, n)
		sc.cluster.nodes = append(sc.cluster.nodes, n.node)
	}
	sc.cluster.clientOpts = sc.scram("admin", adminPassword, 512)
	for _, n := range sc.nodes {
		n.start()
	}
	t.Cleanup(sc.cluster.stop)
	sc.waitServing(60 * time.Second)
	return sc
}

func (sc *secureCluster) properties(n *secureNode, voters string, extra []string) []string {
	jaas := func(module string, opts string) string {
		return "org.apache.kafka.common.security." + module + " required " + opts + ";"
	}
	users := fmt.Sprintf(`user_admin="%s" user_alice="%s" user_bob="%s"`, adminPassword, alicePassword, bobPassword)
	props := []string{
		fmt.Sprintf("node.id=%d", n.id),
		"process.roles=broker,controller",
		fmt.Sprintf("listeners=SASL_SSL://%s,SSL://%s,SASL_PLAINTEXT://%s,INTERNAL://%s,CONTROLLER://%s",
			n.clientAddr, n.sslAddr, n.saslPlainAddr, n.internalAddr, n.ctrlAddr),
		"listener.security.protocol.map=SASL_SSL:SASL_SSL,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,INTERNAL:SASL_SSL,CONTROLLER:SSL",
		"inter.broker.listener.name=INTERNAL",
		"sasl.mechanism.inter.broker.protocol=SCRAM-SHA-512",
		"controller.listener.names=CONTROLLER",
		"controller.quorum.voters=" + voters,
		"sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-256,SCRAM-SHA-512,OAUTHBEARER",
		"listener.name.internal.sasl.enabled.mechanisms=SCRAM-SHA-512",
		"listener.name.sasl_ssl.plain.sasl.jaas.config=" + jaas("plain.PlainLoginModule", users),
		"listener.name.sasl_plaintext.plain.sasl.jaas.config=" + jaas("plain.PlainLoginModule", users),
		"listener.name.internal.scram-sha-512.sasl.jaas.config=" + jaas("scram.ScramLoginModule", `username="broker" password="broker-secret"`),
		"ssl.keystore.type=PEM",
		"ssl.keystore.location=" + filepath.Join(sc.certs, "broker.keystore.pem"),
		"ssl.truststore.type=PEM",
		"ssl.truststore.location=" + filepath.Join(sc.certs, "ca.pem"),
		"listener.name.ssl.ssl.client.auth=required",
		"listener.name.controller.ssl.client.auth=required",
		"ssl.principal.mapping.rules=RULE:^CN=([^,]+)$/$1/,DEFAULT",
		"authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer",
		"super.users=User:admin;User:broker",
		"connection.failed.authentication.delay.ms=50",
		"ssl.store.reload.interval.ms=200",
		"log.dirs=" + n.dataDir,
		"metrics.listen=",
		"log.level=info",
		"default.replication.factor=" + fmt.Sprint(min(3, len(strings.Split(voters, ",")))),
		"offsets.topic.replication.factor=" + fmt.Sprint(min(3, len(strings.Split(voters, ",")))),
	}
	return append(props, extra...)
}

// format stores the SCRAM credentials of broker and admin for the first
// controller to commit.
func (sc *secureCluster) format(n *secureNode) {
	sc.t.Helper()
	out, err := exec.Command(kbrokerBin, "format", "--config", n.config,
		"--add-scram", "SCRAM-SHA-512=[name=broker,password=broker-secret]",
		"--add-scram", "SCRAM-SHA-512=[name=admin,password="+adminPassword+"]").CombinedOutput()
	if err != nil {
		sc.t.Fatalf("kbroker format: %v\n%s", err, out)
	}
}

// caPool is the development CA.
func (sc *secureCluster) caPool() *x509.CertPool {
	sc.t.Helper()
	pem, err := os.ReadFile(filepath.Join(sc.certs, "ca.pem"))
	if err != nil {
		sc.t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pem)
	return pool
}

// tlsConfig trusts the development CA, presenting client's certificate
// when client is not "".
func (sc *secureCluster) tlsConfig(client string) *tls.Config {
	sc.t.Helper()
	cfg := &tls.Config{RootCAs: sc.caPool(), MinVersion: tls.VersionTLS12}
	if client != "" {
		cert, err := tls.LoadX509KeyPair(filepath.Join(sc.certs, client+".cert.pem"), filepath.Join(sc.certs, client+".key.pem"))
		if err != nil {
			sc.t.Fatal(err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	return cfg
}

// scram is a SASL_SSL client's options for a SCRAM user (bits 256 or 512).
func (sc *secureCluster) scram(user, pass string, bits int) []kgo.Opt {
	auth := scram.Auth{User: user, Pass: pass}
	mech := auth.AsSha256Mechanism()
	if bits == 512 {
		mech = auth.AsSha512Mechanism()
	}
	return []kgo.Opt{kgo.DialTLSConfig(sc.tlsConfig("")), kgo.SASL(mech)}
}

// plain is a SASL_SSL client's options for a PLAIN user.
func (sc *secureCluster) plain(user, pass string) []kgo.Opt {
	return []kgo.Opt{kgo.DialTLSConfig(sc.tlsConfig("")), kgo.SASL(plain.Auth{User: user, Pass: pass}.AsMechanism())}
}

// client connects to node i's SASL_SSL listener (0-based) with opts.
func (sc *secureCluster) client(i int, opts ...kgo.Opt) *kgo.Client {
	sc.t.Helper()
	return newClient(sc.t, []string{sc.nodes[i].clientAddr}, opts...)
}

// admin is a kadm client of the super user admin (SCRAM-SHA-512).
func (sc *secureCluster) admin() *kadm.Client {
	return kadm.NewClient(sc.client(0, sc.scram("admin", adminPassword, 512)...))
}

// ping reports whether a client with opts can talk to addr.
func ping(t *testing.T, addr string, opts ...kgo.Opt) error {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addr)}, opts...)...)
	if err != nil {
		return err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return cl.Ping(ctx)
}

// mechanism is a franz-go SASL mechanism under a name, for table tests.
type mechanism struct {
	name string
	mech sasl.Mechanism
}

// upsertSCRAM sets a user's SCRAM credential through the admin API.
func upsertSCRAM(t *testing.T, adm *kadm.Client, user, pass string, m kadm.ScramMechanism) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	res, err := adm.AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{{User: user, Mechanism: m, Iterations: 4096, Password: pass}})
	must(t, err, "AlterUserSCRAMs %s", user)
	for _, r := range res {
		must(t, r.Err, "AlterUserSCRAMs %s", r.User)
	}
}

// createACLs creates the builder's ACLs and fails on any error.
func createACLs(t *testing.T, adm *kadm.Client, b *kadm.ACLBuilder) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	res, err := adm.CreateACLs(ctx, b)
	must(t, err, "CreateACLs")
	for _, r := range res {
		must(t, r.Err, "CreateACLs %s %s %s", r.Principal, r.Name, r.Operation)
	}
}
