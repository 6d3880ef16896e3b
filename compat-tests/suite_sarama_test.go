package compat

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kbroker/kbroker/internal/testsupport"
)

// saramaKafkaVersion is the KAFKA_VERSION the suite is told (its tests skip
// what the version lacks): 4.1.2, the newest of its CI matrix's versions
// whose APIs kbroker serves. KBROKER_SARAMA_KAFKA_VERSION overrides it.
const saramaKafkaVersion = "4.1.2"

// IBM/sarama's functional tests (build tag functional; make compat-sarama)
// in the topology of its docker-compose.yml: five combined brokers and
// controllers (racks 1-5) reached through toxiproxy on 127.0.0.1:29091-29095,
// an internal listener between brokers, default and offsets replication
// factor 2, no auto topic creation, no initial rebalance delay. The suite
// is given TOXIPROXY_ADDR and KAFKA_VERSION, its "existing environment"
// mode: most tests that stop and start brokers with docker compose skip
// themselves there; three do not, and a `docker` shim
// (dockerComposeShim) stops and restarts kbroker nodes for them.
// Toxiproxy 2.12.0 (the image its compose file runs) is built from the
// module cache.
func TestSaramaSuite(t *testing.T) {
	wantSuite(t, "sarama")
	const brokers = 5
	var proxied []string
	for i := 1; i <= brokers; i++ {
		proxied = append(proxied, fmt.Sprintf("127.0.0.1:%d", 29090+i))
	}
	needFreeAddrs(t, proxied...)
	ports := testsupport.FreePorts(t, 2*brokers+1)
	toxi := startToxiproxy(t, fmt.Sprintf("127.0.0.1:%d", ports[2*brokers]))
	var clientAddrs []string
	for i := range brokers {
		clientAddrs = append(clientAddrs, fmt.Sprintf("127.0.0.1:%d", ports[i]))
		toxi.createProxy(t, fmt.Sprintf("kafka%d", i+1), proxied[i], clientAddrs[i])
	}
	internal := func(id int32) string { return fmt.Sprintf("127.0.0.1:%d", ports[brokers+int(id)-1]) }
	c := startCluster(t, clusterOpts{
		brokers:     brokers,
		clientAddrs: clientAddrs,
		listeners: func(n *node) string {
			return fmt.Sprintf("PLAINTEXT://%s,INTERNAL://%s,CONTROLLER://%s", n.clientAddr, internal(n.id), n.ctrlAddr)
		},
		nodeFlags: func(id int32) []string {
			return []string{
				fmt.Sprintf("--advertised.listeners=PLAINTEXT://%s,INTERNAL://%s", proxied[id-1], internal(id)),
				fmt.Sprintf("--broker.rack=%d", id),
			}
		},
		flags: []string{
			"--listener.security.protocol.map=PLAINTEXT:PLAINTEXT,INTERNAL:PLAINTEXT,CONTROLLER:PLAINTEXT",
			"--inter.broker.listener.name=INTERNAL",
			"--default.replication.factor=2",
			"--offsets.topic.replication.factor=2",
			"--auto.create.topics.enable=false",
			"--group.initial.rebalance.delay.ms=0",
			"--override=replica.selector.class=org.apache.kafka.common.replica.RackAwareReplicaSelector",
		},
	})
	version := saramaKafkaVersion
	if v := os.Getenv("KBROKER_SARAMA_KAFKA_VERSION"); v != "" {
		version = v
	}
	shim := dockerComposeShim(t, c)
	runSuite(t, clientSuite{
		name: "IBM/sarama functional", module: "github.com/IBM/sarama", version: "v1.61.1",
		pkgs: []string{"."}, tags: "functional", timeout: 30 * time.Minute,
		env: []string{"TOXIPROXY_ADDR=http://" + toxi.addr, "KAFKA_VERSION=" + version,
			"PATH=" + shim + string(os.PathListSeparator) + os.Getenv("PATH")},
	})
}

// toxiproxy is a toxiproxy server started for a test.
type toxiproxy struct{ addr string }

// startToxiproxy builds toxiproxy's server from the module cache and starts
// it on addr; the test's cleanup stops it.
func startToxiproxy(t *testing.T, addr string) *toxiproxy {
	t.Helper()
	gobin := t.TempDir()
	install := exec.Command("go", "install", "github.com/Shopify/toxiproxy/v2/cmd/server@v2.12.0")
	install.Env = append(os.Environ(), "GOBIN="+gobin, "CGO_ENABLED=0")
	if out, err := install.CombinedOutput(); err != nil {
		t.Fatalf("building toxiproxy: %v\n%s", err, out)
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(filepath.Join(gobin, "server"), "-host", host, "-port", port)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting toxiproxy: %v", err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		cmd.Wait()
		if t.Failed() {
			t.Logf("---- toxiproxy output ----\n%s", tail(out.String(), 4<<10))
		}
	})
	tp := &toxiproxy{addr: addr}
	waitFor(t, 30*time.Second, "toxiproxy serving", func() error {
		resp, err := http.Get("http://" + addr + "/version")
		if err != nil {
			return err
		}
		resp.Body.Close()
		return nil
	})
	return tp
}

// createProxy makes toxiproxy forward listen to upstream under name.
func (tp *toxiproxy) createProxy(t *testing.T, name, listen, upstream string) {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"name": name, "listen": listen, "upstream": upstream, "enabled": true})
	resp, err := http.Post("http://"+tp.addr+"/proxies", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatalf("creating proxy %s: %v", name, err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("creating proxy %s: %s", name, resp.Status)
	}
}

// dockerComposeShim puts a `docker` first on the suite's PATH that does
// what its tests ask of docker compose even in an existing environment,
// to kbroker node N, through an HTTP endpoint of this test: `docker compose
// stop kafka-N` and `start kafka-N` (three tests stop and restart a
// broker) and `logs [--since T] kafka-N` (the node's whole output: more
// than asked, which only makes TestFuncIdempotentBufferedSequence's check
// that no OutOfOrderSequenceException was logged stricter). Anything else
// fails, as without docker.
// It returns the shim's directory.
func dockerComposeShim(t *testing.T, c *cluster) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		action, id, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/")
		n, err := strconv.Atoi(id)
		if err != nil || n < 1 || n > len(c.nodes) {
			http.Error(w, "no such broker "+id, http.StatusNotFound)
			return
		}
		node := c.nodes[n-1]
		switch action {
		case "logs":
			io.WriteString(w, node.logs())
		case "stop":
			node.stop()
		case "start":
			if !node.Running() {
				c.restart(node)
			}
		default:
			http.Error(w, "unknown action "+action, http.StatusBadRequest)
		}
	}))
	t.Cleanup(srv.Close)
	dir := t.TempDir()
	script := `#!/bin/sh
# docker compose stop|start kafka-N for sarama's functional tests (kbroker compat-tests)
if [ "$1" = compose ] && { [ "$2" = stop ] || [ "$2" = start ]; } && [ $# -eq 3 ]; then
	exec curl -sf -X POST "` + srv.URL + `/$2/${3#kafka-}"
fi
if [ "$1" = compose ] && [ "$2" = logs ]; then
	for last; do :; done # the service is the last argument
	exec curl -sf "` + srv.URL + `/logs/${last#kafka-}"
fi
echo "docker (kbroker test shim): only 'compose stop|start|logs kafka-N' is emulated" >&2
exit 1
`
	if err := os.WriteFile(filepath.Join(dir, "docker"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}
