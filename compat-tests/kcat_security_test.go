package compat

import (
	"bytes"
	"fmt"
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
// with librdkafka's unsecured token, and a client certificate; a wrong
// password fails with Kafka's message.
func TestKcatSecurity(t *testing.T) {
	kcat, err := exec.LookPath("kcat")
	if err != nil {
		t.Skip("kcat is not installed (.ci/run installs it)")
	}
	sc := startSecureCluster(t, secureOpts{})
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
	t.Run("wrong password", func(t *testing.T) {
		cmd := exec.Command(kcat, append(saslSSL, "-X", "sasl.mechanisms=PLAIN", "-X", "sasl.username=alice",
			"-X", "sasl.password=wrong", "-L", "-m", "5")...)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		done := make(chan error, 1)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		go func() { done <- cmd.Wait() }()
		select {
		case err := <-done:
			if err == nil || !strings.Contains(stderr.String(), "Authentication failed: Invalid username or password") {
				t.Fatalf("kcat with a wrong password: %v\n%s", err, stderr.String())
			}
		case <-time.After(30 * time.Second):
			cmd.Process.Kill()
			t.Fatal(fmt.Sprintf("kcat with a wrong password hung:\n%s", stderr.String()))
		}
	})
}
