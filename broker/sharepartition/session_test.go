package sharepartition

import (
	"math"
	"reflect"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

var (
	tp0 = TopicIDPartition{topic, 0}
	tp1 = TopicIDPartition{topic, 1}
	tp2 = TopicIDPartition{topic, 2}
	sk  = SessionKey{"g", "m"}
)

// The session epochs and errors of ShareFetch, as Kafka's
// SharePartitionManagerTest checks them.
func TestFetchSessionEpochs(t *testing.T) {
	c := NewSessionCache(2)
	steps := []struct {
		name string
		req  FetchRequest
		code int16
		want []TopicIDPartition
	}{
		{"incremental before open", FetchRequest{Key: sk, Epoch: 1}, kerr.ShareSessionNotFound.Code, nil},
		{"close before open", FetchRequest{Key: sk, Epoch: -1}, kerr.ShareSessionNotFound.Code, nil},
		{"acks on the opening fetch", FetchRequest{Key: sk, Epoch: 0, HasAcks: true}, kerr.InvalidRequest.Code, nil},
		{"open", FetchRequest{Key: sk, Epoch: 0, Add: []TopicIDPartition{tp0, tp1}}, 0, []TopicIDPartition{tp0, tp1}},
		{"stale epoch", FetchRequest{Key: sk, Epoch: 0 + 2}, kerr.InvalidShareSessionEpoch.Code, nil},
		{"next epoch adds and forgets", FetchRequest{Key: sk, Epoch: 1, Add: []TopicIDPartition{tp2}, Forget: []TopicIDPartition{tp0}}, 0, []TopicIDPartition{tp1, tp2}},
		{"replayed epoch", FetchRequest{Key: sk, Epoch: 1}, kerr.InvalidShareSessionEpoch.Code, nil},
		{"epoch 2", FetchRequest{Key: sk, Epoch: 2, HasAcks: true}, 0, []TopicIDPartition{tp1, tp2}},
		{"fetch data on the closing fetch", FetchRequest{Key: sk, Epoch: -1, HasFetchData: true}, kerr.InvalidRequest.Code, nil},
		{"close", FetchRequest{Key: sk, Epoch: -1, HasAcks: true}, 0, nil},
		{"gone after close", FetchRequest{Key: sk, Epoch: 3}, kerr.ShareSessionNotFound.Code, nil},
	}
	for _, s := range steps {
		fc, code := c.NewFetchContext(s.req)
		if code != s.code {
			t.Fatalf("%s: code %d, want %d", s.name, code, s.code)
		}
		if code != 0 {
			continue
		}
		if !reflect.DeepEqual(fc.Partitions, s.want) {
			t.Fatalf("%s: partitions %v, want %v", s.name, fc.Partitions, s.want)
		}
		if fc.Full != (s.req.Epoch == 0) || fc.Final != (s.req.Epoch == -1) {
			t.Fatalf("%s: %+v", s.name, fc)
		}
		if fc.Final && !reflect.DeepEqual(fc.Closed, []TopicIDPartition{tp1, tp2}) {
			t.Fatalf("%s: closed %v", s.name, fc.Closed)
		}
	}
}

func TestSessionLimitAndReplace(t *testing.T) {
	c := NewSessionCache(2)
	for _, m := range []string{"a", "b"} {
		if _, code := c.NewFetchContext(FetchRequest{Key: SessionKey{"g", m}, Epoch: 0}); code != 0 {
			t.Fatal(code)
		}
	}
	if _, code := c.NewFetchContext(FetchRequest{Key: SessionKey{"g", "c"}, Epoch: 0}); code != kerr.ShareSessionLimitReached.Code {
		t.Fatalf("over the limit: %d", code)
	}
	// A member opening again replaces its session; it does not count twice.
	if _, code := c.NewFetchContext(FetchRequest{Key: SessionKey{"g", "a"}, Epoch: 0}); code != 0 {
		t.Fatalf("reopen: %d", code)
	}
	if c.Len() != 2 {
		t.Fatalf("%d sessions", c.Len())
	}
}

func TestAcknowledgeSession(t *testing.T) {
	c := NewSessionCache(10)
	if _, _, code := c.AcknowledgeContext(sk, 0); code != kerr.InvalidShareSessionEpoch.Code {
		t.Fatalf("epoch 0: %d", code)
	}
	if _, _, code := c.AcknowledgeContext(sk, 1); code != kerr.ShareSessionNotFound.Code {
		t.Fatalf("no session: %d", code)
	}
	c.NewFetchContext(FetchRequest{Key: sk, Epoch: 0, Add: []TopicIDPartition{tp0}})
	if _, _, code := c.AcknowledgeContext(sk, 2); code != kerr.InvalidShareSessionEpoch.Code {
		t.Fatalf("wrong epoch: %d", code)
	}
	if _, _, code := c.AcknowledgeContext(sk, 1); code != 0 {
		t.Fatalf("epoch 1: %d", code)
	}
	// The fetch and the acknowledge share the epoch sequence.
	if _, code := c.NewFetchContext(FetchRequest{Key: sk, Epoch: 2}); code != 0 {
		t.Fatalf("fetch after acknowledge: %d", code)
	}
	final, closed, code := c.AcknowledgeContext(sk, -1)
	if code != 0 || !final || !reflect.DeepEqual(closed, []TopicIDPartition{tp0}) {
		t.Fatalf("close: %v %v %d", final, closed, code)
	}
	if c.Len() != 0 {
		t.Fatal("session kept after close")
	}
}

// Kafka's ShareRequestMetadata.nextEpoch wraps MaxInt32 to 1.
func TestNextEpochWraps(t *testing.T) {
	if nextEpoch(math.MaxInt32) != 1 || nextEpoch(0) != 1 || nextEpoch(7) != 8 {
		t.Fatal("nextEpoch")
	}
}

// Incremental responses carry new partitions once, partitions with news,
// and partitions answered with an error until they are answered without.
func TestRespond(t *testing.T) {
	c := NewSessionCache(10)
	c.NewFetchContext(FetchRequest{Key: sk, Epoch: 0, Add: []TopicIDPartition{tp0, tp1}})
	if !c.Respond(sk, tp0, false, false) || c.Respond(sk, tp0, false, false) {
		t.Fatal("a new partition is answered once")
	}
	if !c.Respond(sk, tp0, true, false) {
		t.Fatal("news are answered")
	}
	if !c.Respond(sk, tp1, true, true) || !c.Respond(sk, tp1, false, false) || c.Respond(sk, tp1, false, false) {
		t.Fatal("an error is answered again next time, then not")
	}
}

func TestConnectionClosedAndRemoveMember(t *testing.T) {
	c := NewSessionCache(10)
	c.NewFetchContext(FetchRequest{Key: SessionKey{"g", "a"}, Epoch: 0, Conn: "c1", Add: []TopicIDPartition{tp0}})
	c.NewFetchContext(FetchRequest{Key: SessionKey{"g", "b"}, Epoch: 0, Conn: "c2", Add: []TopicIDPartition{tp1}})
	closed := c.ConnectionClosed("c1")
	if len(closed) != 1 || closed[0].Key.Member != "a" || !reflect.DeepEqual(closed[0].Partitions, []TopicIDPartition{tp0}) {
		t.Fatalf("closed %+v", closed)
	}
	if got := c.RemoveMember("g", "b"); len(got) != 1 || c.Len() != 0 {
		t.Fatalf("removed %+v, %d left", got, c.Len())
	}
}
