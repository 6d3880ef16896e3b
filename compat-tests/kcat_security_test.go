package compat

import (
	"bytes"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
)

// kcat (librdkafka 2.0, Debian's) authenticates with every mechanism on
// its listener: PLAIN, SCRAM-SHA-256 and -512 (librdkafka repeats its
// nonce in the final message; Kafka and kbroker accept it), OAUTHBEARER
// with librdkafka's unsecured token, and a client certificate. A wrong
// password, a mechanism the listener does not enable, an unsigned token
// where signatures are checked and no client certificate on a required
// listener each fail with Kafka's error and no metadata served; alice
// producing to a topic she may only describe gets TOPIC_AUTHORIZATION_FAILED
// and nothing is appended. (librdkafka will not send an expired token: it
// refuses one itself; franz-go's TestSecurityMechanismsAuthenticate sends
// one, and a request before authentication.)
func TestKcatSecurity(t *testing.T) {
	t.Parallel()
	kcat, err := exec.LookPath("kcat")
	if err != nil {
		t.Skip("kcat is not installed (.ci/run installs it)")
	}
	jwks := writeJWKS(t, t.TempDir(), newJWKSKey(t, "k1"))
	sc := startSecureCluster(t, secureOpts{properties: []string{
		// SASL_PLAINTEXT checks token signatures: librdkafka's unsecured
		// (unsigned) token is refused there.
		"listener.name.sasl_plaintext.sasl.oauthbearer.jwks.endpoint.url=file:" + jwks,
	}})
	n := sc.nodes[0]
	adm := sc.admin()
	topic := newTopic(t, adm, 1, 1, nil)
	upsertSCRAM(t, adm, "alice", alicePassword, kadm.ScramSha256)
	createACLs(t, adm, kadm.NewACLs().Allow("User:alice").Topics(topic).Operations(kadm.OpWrite, kadm.OpRead, kadm.OpDescribe))
	ca := filepath.Join(sc.certs, "ca.pem")
	saslSSL := []string{"-b", n.clientAddr, "-X", "security.protocol=sasl_ssl", "-X", "ssl.ca.location=" + ca}
	cases := map[string][]string{
		"PLAIN":         append(saslSSL, "-X", "sasl.mechanisms=PLAIN", "-X", "sasl.username=alice", "-X", "sasl.password="+alicePassword),
		"SCRAM-SHA-256": append(saslSSL, "-X", "sasl.mechanisms=SCRAM-SHA-256", "-X", "sasl.username=alice", "-X", "sasl.password="+alicePassword),
		"SCRAM-SHA-512": append(saslSSL, "-X", "sasl.mechanisms=SCRAM-SHA-512", "-X", "sasl.username=admin", "-X", "sasl.password="+adminPassword),
		"OAUTHBEARER": append(saslSSL, "-X", "sasl.mechanisms=OAUTHBEARER", "-X", "enable.sasl.oauthbearer.unsecure.jwt=true",
			"-X", "sasl.oauthbearer.config=principal=alice"),
		"SSL": {"-b", n.sslAddr, "-X", "security.protocol=ssl", "-X", "ssl.ca.location=" + ca,
			"-X", "ssl.certificate.location=" + filepath.Join(sc.certs, "alice.cert.pem"),
			"-X", "ssl.key.location=" + filepath.Join(sc.certs, "alice.key.pem")},
	}
	for name, args := range cases {
		t.Run(name, func(t *testing.T) {
			value := "via-" + name
			runKcat(t, kcat, bytes.NewReader([]byte(value+"\n")), append(args, "-P", "-t", topic, "-X", "acks=all")...)
			out := runKcat(t, kcat, nil, append(args, "-C", "-t", topic, "-o", "beginning", "-e")...)
			if !strings.Contains(out, value) {
				t.Fatalf("kcat read back %q, want %s", out, value)
			}
		})
	}
	// Each failure fails as Kafka fails it, and nothing is served.
	internal := []string{"-b", n.internalAddr, "-X", "security.protocol=sasl_ssl", "-X", "ssl.ca.location=" + ca}
	failures := []struct {
		name string
		args []string
		want string
	}{
		{"wrong password", append(saslSSL, "-X", "sasl.mechanisms=PLAIN", "-X", "sasl.username=alice", "-X", "sasl.password=wrong", "-L"),
			"Authentication failed: Invalid username or password"},
		{"unknown mechanism", append(internal, "-X", "sasl.mechanisms=SCRAM-SHA-256", "-X", "sasl.username=alice",
			"-X", "sasl.password="+alicePassword, "-L"), "Unsupported SASL mechanism: broker's supported mechanisms: SCRAM-SHA-512"},
		{"unsigned token where signatures are checked", []string{"-b", n.saslPlainAddr, "-X", "security.protocol=sasl_plaintext",
			"-X", "sasl.mechanisms=OAUTHBEARER", "-X", "enable.sasl.oauthbearer.unsecure.jwt=true",
			"-X", "sasl.oauthbearer.config=principal=alice", "-L"}, `SASL authentication error: {"status":"invalid_token"}`},
		{"no client certificate on a required listener", []string{"-b", n.sslAddr, "-X", "security.protocol=ssl",
			"-X", "ssl.ca.location=" + ca, "-L"}, "alert certificate required"},
	}
	for _, tc := range failures {
		t.Run(tc.name, func(t *testing.T) {
			kcatFails(t, kcat, nil, tc.want, append(tc.args, "-m", "2")...) // each error is logged at once; -m ends the wait
		})
	}
	t.Run("topic without an ACL", func(t *testing.T) {
		other := newTopic(t, adm, 1, 1, nil)
		// alice may see the topic (so the Produce is sent), not write it.
		createACLs(t, adm, kadm.NewACLs().Allow("User:alice").Topics(other).Operations(kadm.OpDescribe))
		sc.waitTopicVisibleEverywhere(other, sc.scram("alice", alicePassword, 256))
		kcatFails(t, kcat, bytes.NewReader([]byte("refused\n")), "Delivery failed for message: Broker: Topic authorization failed", append(cases["SCRAM-SHA-256"], "-P", "-t", other, "-X", "acks=all")...)
		if end := endOffset(t, adm, other); end != 0 {
			t.Fatalf("a refused produce appended: end offset %d", end)
		}
	})
}

// kcatFails runs kcat, which must fail within 30 s with want on stderr.
func kcatFails(t *testing.T, kcat string, stdin *bytes.Reader, want string, args ...string) {
	t.Helper()
	_, stderr, err := execKcat(t, kcat, stdin, 30*time.Second, args...)
	if err == nil || !strings.Contains(stderr, want) {
		t.Fatalf("kcat %v: %v, want a failure with %q\n%s", args, err, want, stderr)
	}
}
