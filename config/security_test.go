package config

import (
	"strings"
	"testing"
)

// A secured server.properties as Kafka's docs write it loads: several
// listeners with their protocols, listener-prefixed SSL and JAAS settings,
// and the typed security keys.
func TestLoadSecurityProperties(t *testing.T) {
	file := writeFile(t, "server.properties", `
listeners=SASL_SSL://127.0.0.1:9093,SSL://127.0.0.1:9094,CONTROLLER://127.0.0.1:19093
listener.security.protocol.map=SASL_SSL:SASL_SSL,SSL:SSL,CONTROLLER:SSL
security.inter.broker.protocol=SASL_SSL
sasl.mechanism.inter.broker.protocol=SCRAM-SHA-512
sasl.enabled.mechanisms=SCRAM-SHA-512,PLAIN
ssl.keystore.location=/etc/kbroker/broker.pem
ssl.key.password=secret
listener.name.ssl.ssl.client.auth=required
listener.name.sasl_ssl.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required user_admin="x";
super.users=User:admin;User:CN=broker
authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer
connections.max.reauth.ms=60000
`)
	c := mustLoad(t, file, []string{"KBROKER_SSL_TRUSTSTORE_LOCATION=/etc/kbroker/ca.pem"},
		"--override", "listener.name.sasl_ssl.connections.max.reauth.ms=30000")
	if c.InterBrokerListenerName != "SASL_SSL" {
		t.Errorf("InterBrokerListenerName = %q, want the listener named like security.inter.broker.protocol", c.InterBrokerListenerName)
	}
	if len(c.Ignored) != 0 || len(c.Unknown) != 0 {
		t.Errorf("Ignored = %v, Unknown = %v", c.Ignored, c.Unknown)
	}
	for _, tc := range []struct{ listener, key, want string }{
		{"SSL", "ssl.client.auth", "required"},
		{"SASL_SSL", "ssl.client.auth", ""}, // not set at all
		{"SASL_SSL", "ssl.keystore.location", "/etc/kbroker/broker.pem"},
		{"SASL_SSL", "ssl.truststore.location", "/etc/kbroker/ca.pem"},
		{"SASL_SSL", "connections.max.reauth.ms", "30000"},
		{"SSL", "connections.max.reauth.ms", "60000"},
		{"SSL", "sasl.mechanism.inter.broker.protocol", "SCRAM-SHA-512"},
		{"SASL_SSL", "sasl.enabled.mechanisms", "SCRAM-SHA-512,PLAIN"},
	} {
		if got, _ := c.ListenerProperty(tc.listener, tc.key); got != tc.want {
			t.Errorf("ListenerProperty(%s, %s) = %q, want %q", tc.listener, tc.key, got, tc.want)
		}
	}
	if got := c.ListenerProtocol("controller"); got != ProtocolSSL {
		t.Errorf("ListenerProtocol(controller) = %q", got)
	}
	for _, key := range []string{"ssl.key.password", "listener.name.sasl_ssl.plain.sasl.jaas.config"} {
		e := entry(c, key)
		if !e.Sensitive || !e.Null || e.Value != "" {
			t.Errorf("entry %s = %+v, want a sensitive null", key, e)
		}
	}
	if e := entry(c, "listener.name.ssl.ssl.client.auth"); e.Value != "required" || e.Sensitive || e.Source != SourceFile {
		t.Errorf("entry listener.name.ssl.ssl.client.auth = %+v", e)
	}
	if e := entry(c, "ssl.truststore.location"); e.Source != SourceEnv {
		t.Errorf("entry ssl.truststore.location = %+v, want from the environment", e)
	}
}

func TestSensitiveProperty(t *testing.T) {
	for key, want := range map[string]bool{
		"ssl.key.password":                               true,
		"listener.name.x.ssl.keystore.key":               true,
		"ssl.keystore.certificate.chain":                 false,
		"listener.name.x.scram-sha-256.sasl.jaas.config": true,
		"sasl.oauthbearer.jwks.endpoint.url":             false,
	} {
		if got := SensitiveProperty(key); got != want {
			t.Errorf("SensitiveProperty(%s) = %v, want %v", key, got, want)
		}
	}
}

func TestSecurityErrorsNameTheKey(t *testing.T) {
	_, err := load(t, "", nil, "--listeners=PLAINTEXT://127.0.0.1:9092", "--security.inter.broker.protocol=TLS")
	if err == nil || !strings.Contains(err.Error(), "security.inter.broker.protocol=TLS is invalid") {
		t.Fatalf("err = %v", err)
	}
}
