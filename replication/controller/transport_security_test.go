package controller

import (
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"io"
	"log/slog"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	fplain "github.com/twmb/franz-go/pkg/sasl/plain"

	"github.com/kbroker/kbroker/protocol"
	"github.com/kbroker/kbroker/security/devca"
	"github.com/kbroker/kbroker/security/principal"
	"github.com/kbroker/kbroker/security/sasl"
	"github.com/kbroker/kbroker/security/sasl/plain"
	ksession "github.com/kbroker/kbroker/security/session"
)

// A secured controller listener (SASL_SSL, PLAIN): a Raft stream reaches
// Raft only once it has run TLS, its fingerprint and SASL, as a principal
// AuthorizeCaller allows; a wrong password or an unauthorized principal is
// refused before Raft sees anything.
func TestRaftStreamAuthenticatesOnASecuredListener(t *testing.T) {
	now := time.Now()
	ca, err := devca.NewCA("ca", now, time.Hour, nil)
	if err != nil {
		t.Fatal(err)
	}
	kp, err := ca.Issue(devca.Leaf{Subject: pkix.Name{CommonName: "node"}, IPs: []net.IP{net.IPv4(127, 0, 0, 1)}, Server: true, Client: true, Validity: time.Hour}, now)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := tls.X509KeyPair(kp.ChainPEM(), kp.KeyPEM())
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(ca.CertPEM())
	reg, err := sasl.NewRegistry(plain.New(plain.StaticUsers{"broker": "broker-secret", "intruder": "x"}))
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	fp := quorumFingerprint([]Voter{{ID: 1, Addr: ln.Addr().String()}})
	var failures atomic.Int32
	sec := &Security{
		TLS:      &tls.Config{Certificates: []tls.Certificate{cert}},
		Listener: protocol.ListenerSecurity{Session: ksession.Config{Protocol: ksession.SASLSSL, Mechanisms: reg}},
		AuthorizeCaller: func(p principal.Principal, _ net.Addr, key int16) bool {
			return key == RaftStreamKey && p == principal.User("broker")
		},
		OnAuthFailure: func(protocol.AuthFailure) { failures.Add(1) },
	}
	m := newMux(ln, slog.New(slog.DiscardHandler), fp, sec)
	defer m.close()
	accepted := make(chan net.Conn, 4)
	go func() {
		for {
			c, err := m.raft.Accept()
			if err != nil {
				return
			}
			accepted <- c
		}
	}()
	addr := raft.ServerAddress(ln.Addr().String())
	dial := func(user, pass string) (net.Conn, error) {
		s := &streamLayer{fingerprint: fp, client: protocol.ClientSecurity{
			TLS:  func(host string) (*tls.Config, error) { return &tls.Config{RootCAs: roots, ServerName: host}, nil },
			SASL: fplain.Auth{User: user, Pass: pass}.AsMechanism(),
		}}
		return s.Dial(addr, 5*time.Second)
	}
	for _, bad := range [][2]string{{"broker", "wrong"}, {"intruder", "x"}} {
		c, err := dial(bad[0], bad[1])
		if err == nil {
			c.SetReadDeadline(time.Now().Add(5 * time.Second))
			_, err = c.Read(make([]byte, 1))
			c.Close()
		}
		if err == nil || err == io.ErrUnexpectedEOF {
			t.Fatalf("%s/%s: the stream stayed open", bad[0], bad[1])
		}
		select {
		case <-accepted:
			t.Fatalf("%s/%s reached Raft", bad[0], bad[1])
		default:
		}
	}
	c, err := dial("broker", "broker-secret")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	select {
	case got := <-accepted:
		got.Close()
	case <-time.After(5 * time.Second):
		t.Fatal("an authenticated, authorized stream never reached Raft")
	}
	if n := failures.Load(); n != 1 {
		t.Fatalf("failed authentications reported: %d, want 1 (the wrong password)", n)
	}
}
