package chaos

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// canary is a well-behaved client producing and reading all along: every
// failure it sees is a failure of the broker to isolate bad clients.
type canary struct {
	stop chan struct{}
	done chan struct{}

	mu       sync.Mutex // guards the fields below
	acked    []string
	failures []string
}

func startCanary(seeds []string, topic string) (*canary, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.DefaultProduceTopic(topic), kgo.RecordDeliveryTimeout(5*time.Second))
	if err != nil {
		return nil, err
	}
	c := &canary{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(c.done)
		defer cl.Close()
		for i := 0; ; i++ {
			select {
			case <-c.stop:
				return
			case <-time.After(50 * time.Millisecond):
			}
			v := fmt.Sprintf("canary-%06d", i)
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			start := time.Now()
			err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte(v)}).FirstErr()
			cancel()
			c.mu.Lock()
			if err != nil {
				c.failures = append(c.failures, fmt.Sprintf("%s: %v", v, err))
			} else if d := time.Since(start); d > 2*time.Second {
				c.failures = append(c.failures, fmt.Sprintf("%s took %v", v, d))
			} else {
				c.acked = append(c.acked, v)
			}
			c.mu.Unlock()
		}
	}()
	return c, nil
}

// check returns the canary's failures so far (nil: none) and how many
// values it got acknowledged.
func (c *canary) check() (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.failures) > 0 {
		return len(c.acked), fmt.Errorf("a well-behaved client failed %d times: %s", len(c.failures), names(c.failures, 5))
	}
	return len(c.acked), nil
}

func (c *canary) finish() []string {
	close(c.stop)
	<-c.done
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.acked)
}

// outcome is what a hostile connection got.
type outcome int

const (
	closed   outcome = iota // the broker closed the connection
	answered                // a response arrived
	silent                  // neither, within the deadline
)

func (o outcome) String() string { return [...]string{"closed", "answered", "silent"}[o] }

// send writes b on a new connection to addr and waits up to d for a
// response frame or the connection's end; the response is returned.
func send(addr string, b []byte, d time.Duration) (outcome, []byte, error) {
	conn, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		return 0, nil, err
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(d))
	if _, err := conn.Write(b); err != nil {
		return closed, nil, nil // closed while we were still writing
	}
	return await(conn)
}

// await reads one response frame from conn (deadline already set).
func await(conn net.Conn) (outcome, []byte, error) {
	var size [4]byte
	if _, err := io.ReadFull(conn, size[:]); err != nil {
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			return silent, nil, nil
		}
		return closed, nil, nil
	}
	n := binary.BigEndian.Uint32(size[:])
	if n > 64<<20 {
		return answered, nil, fmt.Errorf("response frame of %d bytes", n)
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(conn, body); err != nil {
		return answered, nil, fmt.Errorf("torn response: %w", err)
	}
	return answered, body, nil
}

// frame prefixes b with its length.
func frame(b []byte) []byte {
	return append(binary.BigEndian.AppendUint32(nil, uint32(len(b))), b...)
}

// header is a request header: v2 (flexible: an empty tagged-field section
// follows) when kmsg says the key's version is flexible, else v1.
func header(key, version int16, corr int32) []byte {
	b := binary.BigEndian.AppendUint16(nil, uint16(key))
	b = binary.BigEndian.AppendUint16(b, uint16(version))
	b = binary.BigEndian.AppendUint32(b, uint32(corr))
	b = append(binary.BigEndian.AppendUint16(b, 7), "hostile"...)
	if req := kmsg.RequestForKey(key); req != nil {
		req.SetVersion(version)
		if req.IsFlexible() {
			b = append(b, 0)
		}
	}
	return b
}

// TestHostileClients sends garbage, truncated and oversized frames,
// unsupported versions of every API key, thousands of idle connections and
// a reader that never reads, while a canary client produces all along:
// each bad request gets an error or a closed connection, the canary never
// fails, and the broker stays up.
func TestHostileClients(t *testing.T) {
	needMode(t, "full")
	s := seed()
	rng := rand.New(rand.NewPCG(s, 3))
	dir := runDir(t, "hostile", s)
	t.Logf("hostile clients: seed=%d, out %s", s, dir)
	c := startCluster(t, clusterOpts{brokers: 1, runDir: dir})
	n := c.nodes[0]
	must(t, c.createTopic("canary", 1, 1, nil), "creating the canary topic")
	must(t, c.createTopic("big", 1, 1, nil), "creating the big topic")
	must(t, c.waitHealthy("big", 1, 1, 30*time.Second), "topics ready")
	big := make([]string, 20000)
	for i := range big {
		big[i] = fmt.Sprintf("big-%06d", i)
	}
	_, err := produceSync(c.seeds(), "big", 1, big)
	must(t, err, "filling the big topic")

	cn, err := startCanary(c.seeds(), "canary")
	must(t, err, "canary")
	versions := apiVersions(t, n)

	for _, a := range []struct {
		name string
		run  func() (string, error)
	}{
		{"garbage frames", func() (string, error) { return garbageFrames(rng, n.clientAddr, versions) }},
		{"truncated frames", func() (string, error) { return truncatedFrames(n.clientAddr) }},
		{"oversized frames", func() (string, error) { return oversizedFrames(n) }},
		{"unsupported versions of every API key", func() (string, error) { return unsupportedVersions(n.clientAddr, versions) }},
		{"thousands of idle connections", func() (string, error) { return idleConnections(n.clientAddr, 3000, cn) }},
		{"a reader that never reads", func() (string, error) { return slowReader(n.clientAddr) }},
	} {
		before, _ := cn.check()
		what, err := a.run()
		if err != nil {
			t.Errorf("%s: %v", a.name, err)
		}
		if !n.Running() {
			t.Fatalf("the broker exited during %s", a.name)
		}
		// The canary must keep going: five more values acknowledged.
		err = waitFor(10*time.Second, "the canary to make progress", func() error {
			acked, err := cn.check()
			if err == nil && acked < before+5 {
				err = fmt.Errorf("%d values acknowledged since the attack began", acked-before)
			}
			return err
		})
		if err != nil {
			t.Fatalf("during %s: %v", a.name, err)
		}
		acked, _ := cn.check()
		t.Logf("hostile %s: %s; canary: %d values acknowledged meanwhile, no failure", a.name, what, acked-before)
	}
	acked := cn.finish()
	got, err := readValues(c.seeds(), "canary", 1, 30*time.Second)
	must(t, err, "reading the canary back")
	must(t, checkAllThere(got, acked), "canary values")
	if rss := rssMiB(n); rss > 1024 {
		t.Errorf("broker RSS %d MiB after the hostile clients", rss)
	}
}

// apiVersions returns the broker's key -> [min, max] table.
func apiVersions(t *testing.T, n *node) map[int16][2]int16 {
	resp, err := ask(n, kmsg.NewPtrApiVersionsRequest(), 5*time.Second)
	must(t, err, "ApiVersions")
	out := map[int16][2]int16{}
	for _, k := range resp.(*kmsg.ApiVersionsResponse).ApiKeys {
		out[k.ApiKey] = [2]int16{k.MinVersion, k.MaxVersion}
	}
	return out
}

// longPoll are APIs a valid request may legitimately hold for long.
var longPoll = map[int16]bool{1: true, 11: true, 14: true}

// garbageFrames: well-framed requests of served APIs and versions whose
// bodies are random bytes, and frames of random bytes whose key is
// negative. Each must be answered (with the same correlation id) or closed.
func garbageFrames(rng *rand.Rand, addr string, versions map[int16][2]int16) (string, error) {
	var keys []int16
	for k := range versions {
		if !longPoll[k] {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	count := map[outcome]int{}
	for i := range 200 {
		var b []byte
		corr := int32(1000 + i)
		random := make([]byte, rng.IntN(600))
		for j := range random {
			random[j] = byte(rng.Uint32())
		}
		if i%2 == 0 {
			k := keys[rng.IntN(len(keys))]
			v := versions[k][0] + int16(rng.IntN(int(versions[k][1]-versions[k][0])+1))
			b = append(header(k, v, corr), random...)
		} else {
			b = append([]byte{0x80 | byte(rng.Uint32()), byte(rng.Uint32())}, random...)
		}
		o, resp, err := send(addr, frame(b), 5*time.Second)
		if err != nil {
			return "", fmt.Errorf("frame %d (% x...): %w", i, b[:min(8, len(b))], err)
		}
		if o == silent {
			return "", fmt.Errorf("frame %d (% x...): no answer and no close within 5 s", i, b[:min(8, len(b))])
		}
		if o == answered && (len(resp) < 4 || int32(binary.BigEndian.Uint32(resp)) != corr) {
			return "", fmt.Errorf("frame %d: answer with a wrong correlation id (% x)", i, resp[:min(8, len(resp))])
		}
		count[o]++
	}
	return fmt.Sprint(count), nil
}

// truncatedFrames: a frame shorter than its length prefix, then end of
// input; a length prefix cut short; a valid request cut in the middle.
func truncatedFrames(addr string) (string, error) {
	api := kmsg.NewRequestFormatter(kmsg.FormatterClientID("hostile")).AppendRequest(nil, kmsg.NewPtrMetadataRequest(), 7)
	for i, b := range [][]byte{
		append(binary.BigEndian.AppendUint32(nil, 100), make([]byte, 50)...),
		{0, 0},
		api[:len(api)/2],
		api[:6],
	} {
		conn, err := net.DialTimeout("tcp", addr, 2*time.Second)
		if err != nil {
			return "", err
		}
		conn.SetDeadline(time.Now().Add(5 * time.Second))
		conn.Write(b)
		conn.(*net.TCPConn).CloseWrite()
		o, _, err := await(conn)
		conn.Close()
		if err != nil || o != closed {
			return "", fmt.Errorf("truncated frame %d (%d bytes): %v %v, want closed", i, len(b), o, err)
		}
	}
	return "4 truncated frames, each connection closed", nil
}

// oversizedFrames: length prefixes of 2 GiB - 1, negative ones, and one
// above socket.request.max.bytes: closed without reading (or allocating)
// the body.
func oversizedFrames(n *node) (string, error) {
	before := rssMiB(n)
	for _, size := range []uint32{0x7FFFFFFF, 0x80000000, 0xFFFFFFFF, 200 << 20} {
		b := append(binary.BigEndian.AppendUint32(nil, size), header(3, 12, 1)...)
		o, _, err := send(n.clientAddr, b, 5*time.Second)
		if err != nil || o != closed {
			return "", fmt.Errorf("frame claiming %d bytes: %v %v, want closed", int32(size), o, err)
		}
	}
	after := rssMiB(n)
	if after-before > 256 {
		return "", fmt.Errorf("RSS grew from %d to %d MiB", before, after)
	}
	return fmt.Sprintf("frames claiming 2 GiB-1, -2 GiB, -1 and 200 MiB closed; RSS %d -> %d MiB", before, after), nil
}

// unsupportedVersions: every key from 0 to kmsg.MaxKey (and a few beyond)
// at versions below and above what the broker serves, with an empty body:
// an answer with the request's correlation id, or a closed connection.
// ApiVersions above its newest version must answer UNSUPPORTED_VERSION
// (the v0 fallback clients rely on).
func unsupportedVersions(addr string, versions map[int16][2]int16) (string, error) {
	count := map[outcome]int{}
	corr := int32(0)
	keys := []int16{1000, 32767, -1}
	for k := int16(0); k <= kmsg.MaxKey; k++ {
		keys = append(keys, k)
	}
	for _, k := range keys {
		vs := []int16{0, 32767, -1}
		if r, ok := versions[k]; ok {
			vs = []int16{r[1] + 1, 32767, -1}
			if r[0] > 0 {
				vs = append(vs, r[0]-1)
			}
		}
		for _, v := range vs {
			corr++
			o, resp, err := send(addr, frame(header(k, v, corr)), 5*time.Second)
			if err != nil {
				return "", fmt.Errorf("key %d v%d: %w", k, v, err)
			}
			switch {
			case o == silent:
				return "", fmt.Errorf("key %d v%d: no answer and no close within 5 s", k, v)
			case o == answered && (len(resp) < 4 || int32(binary.BigEndian.Uint32(resp)) != corr):
				return "", fmt.Errorf("key %d v%d: answer with a wrong correlation id", k, v)
			case k == 18 && v > versions[18][1] && (o != answered || len(resp) < 6 || binary.BigEndian.Uint16(resp[4:]) != 35):
				return "", fmt.Errorf("ApiVersions v%d: %v % x, want an UNSUPPORTED_VERSION answer", v, o, resp)
			}
			count[o]++
		}
	}
	return fmt.Sprintf("%d requests: %v", corr, count), nil
}

// idleConnections opens many connections that send nothing (and some a
// partial frame), checks that a new client still works, then closes them.
func idleConnections(addr string, count int, cn *canary) (string, error) {
	var conns []net.Conn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for i := range count {
		c, err := net.DialTimeout("tcp", addr, 2*time.Second)
		if err != nil {
			return "", fmt.Errorf("connection %d: %w", i, err)
		}
		if i%3 == 0 {
			c.Write([]byte{0, 0, 0, 100, 0, 3})
		}
		conns = append(conns, c)
	}
	time.Sleep(3 * time.Second)
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		return "", err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl); err != nil {
		return "", fmt.Errorf("a new client with %d idle connections open: %w", count, err)
	}
	if _, err := cn.check(); err != nil {
		return "", err
	}
	return fmt.Sprintf("%d idle connections (a third with a partial frame) held; a new client served", count), nil
}

// slowReader pipelines fetches of a 3 MB partition on one connection and
// never reads the responses, for 10 s.
func slowReader(addr string) (string, error) {
	conn, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		return "", err
	}
	defer conn.Close()
	conn.(*net.TCPConn).SetReadBuffer(4096)
	f := kmsg.NewRequestFormatter(kmsg.FormatterClientID("slow"))
	var buf []byte
	for i := range 300 {
		req := kmsg.NewPtrFetchRequest()
		req.SetVersion(11)
		req.ReplicaID, req.MaxBytes, req.MaxWaitMillis = -1, 4<<20, 100
		ft := kmsg.NewFetchRequestTopic()
		ft.Topic = "big"
		fp := kmsg.NewFetchRequestTopicPartition()
		fp.PartitionMaxBytes, fp.LogStartOffset, fp.CurrentLeaderEpoch = 4<<20, -1, -1
		ft.Partitions = append(ft.Partitions, fp)
		req.Topics = append(req.Topics, ft)
		buf = f.AppendRequest(buf, req, int32(i))
	}
	conn.SetWriteDeadline(time.Now().Add(10 * time.Second))
	written, _ := conn.Write(buf) // may block once the broker stops reading: that is allowed
	time.Sleep(10 * time.Second)
	return fmt.Sprintf("300 pipelined 4 MiB fetches (%d of %d bytes of requests accepted) left unread for 10 s", written, len(buf)), nil
}

// rssMiB is the resident memory of the node's process (0 if unknown).
func rssMiB(n *node) int {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", n.Pid()))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmRSS:" {
			kb, _ := strconv.Atoi(f[1])
			return kb / 1024
		}
	}
	return 0
}
