package compat

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/kbroker/kbroker/internal/testsupport"
)

// confluent-kafka-go v2's kafka package (make compat-confluent): cgo with
// its bundled librdkafka, against one broker configured as the package's
// testresources/kraft/server.properties configures Kafka for its CI:
// PLAINTEXT and SASL_PLAINTEXT (PLAIN users admin and testuser), the
// StandardAuthorizer with super.users=User:admin and
// allow.everyone.if.no.acl.found, num.partitions=4, auto topic creation,
// broker.rack=RACK1, both group protocols, connections.max.reauth.ms=10000,
// log.retention.bytes=1000000000. The addresses go to the suite in its
// testconf.json. TEST_CONSUMER_GROUP_PROTOCOL=consumer in the environment
// runs the consumer tests on KIP-848, as its CI's second job does.
func TestConfluentSuite(t *testing.T) {
	wantSuite(t, "confluent")
	ports := testsupport.FreePorts(t, 1)
	sasl := fmt.Sprintf("127.0.0.1:%d", ports[0])
	c := startCluster(t, clusterOpts{
		brokers: 1,
		listeners: func(n *node) string {
			return fmt.Sprintf("PLAINTEXT://%s,SASL_PLAINTEXT://%s,CONTROLLER://%s", n.clientAddr, sasl, n.ctrlAddr)
		},
		flags: []string{
			"--num.partitions=4",
			"--auto.create.topics.enable=true",
			"--default.replication.factor=1",
			"--offsets.topic.replication.factor=1",
			"--override=sasl.enabled.mechanisms=PLAIN",
			"--override=listener.name.sasl_plaintext.plain.sasl.jaas.config=" +
				`org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" password="admin" user_admin="admin" user_testuser="testpass";`,
			"--authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer",
			"--super.users=User:admin",
			"--allow.everyone.if.no.acl.found=true",
			"--broker.rack=RACK1",
			"--group.coordinator.rebalance.protocols=classic,consumer",
			"--connections.max.reauth.ms=10000",
			"--log.retention.bytes=1000000000",
		},
	})
	conf := map[string]any{
		"Brokers":       c.seeds()[0],
		"BrokersSasl":   sasl,
		"SaslUsername":  "testuser",
		"SaslPassword":  "testpass",
		"SaslMechanism": "PLAIN",
		"TopicName":     "test",
		"GroupID":       "testgroup",
		// The example's 1,000,000 records make the two performance
		// tests minutes long on two shared cores; their CI does not run
		// them against Kafka at all.
		"PerfMsgCount": 100000,
		"PerfMsgSize":  100,
		"Config":       []string{"api.version.request=true"},
	}
	runSuite(t, clientSuite{
		name: "confluent-kafka-go/v2 kafka", module: "github.com/confluentinc/confluent-kafka-go/v2", version: "v2.11.1",
		pkgs: []string{"kafka"}, cgo: true, timeout: 30 * time.Minute,
		prepare: func(t *testing.T, pkgDir string) {
			b, err := json.MarshalIndent(conf, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(pkgDir, "testconf.json"), b, 0o644); err != nil {
				t.Fatal(err)
			}
		},
	})
}
