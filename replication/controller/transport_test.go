package controller

import (
	"io"
	"log/slog"
	"net"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

func TestQuorumFingerprintIgnoresVoterOrder(t *testing.T) {
	a := []Voter{{ID: 1, Addr: "h1:9093"}, {ID: 2, Addr: "h2:9093"}, {ID: 3, Addr: "h3:9093"}}
	b := []Voter{a[2], a[0], a[1]}
	if quorumFingerprint(a) != quorumFingerprint(b) {
		t.Fatal("the same voters in another order give another fingerprint")
	}
	other := []Voter{{ID: 1, Addr: "h1:9093"}, {ID: 2, Addr: "h2:9093"}, {ID: 4, Addr: "h3:9093"}}
	if quorumFingerprint(a) == quorumFingerprint(other) {
		t.Fatal("different voter sets share a fingerprint")
	}
}

// A node of another cluster dialing an address this node now holds (a port
// reused by a new cluster on one host, as two test clusters in a row do) is
// refused before its Raft traffic reaches this node's Raft; a node of our
// quorum gets through.
func TestRaftConnectionFromAnotherQuorumRefused(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ours := quorumFingerprint([]Voter{{ID: 1, Addr: ln.Addr().String()}})
	m := newMux(ln, slog.New(slog.DiscardHandler), ours, &Security{})
	defer m.close()
	addr := raft.ServerAddress(ln.Addr().String())

	accepted := make(chan net.Conn, 2)
	go func() {
		for {
			c, err := m.raft.Accept()
			if err != nil {
				return
			}
			accepted <- c
		}
	}()

	foreign := &streamLayer{fingerprint: quorumFingerprint([]Voter{{ID: 100, Addr: "127.0.0.1:1"}})}
	c, err := foreign.Dial(addr, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.Read(make([]byte, 1)); err != io.EOF {
		t.Fatalf("a foreign quorum's connection was not closed: read err %v", err)
	}
	select {
	case <-accepted:
		t.Fatal("a foreign quorum's connection reached Raft")
	default:
	}

	member := &streamLayer{fingerprint: ours}
	c2, err := member.Dial(addr, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	select {
	case got := <-accepted:
		got.Close()
	case <-time.After(5 * time.Second):
		t.Fatal("a connection of our own quorum never reached Raft")
	}
}
