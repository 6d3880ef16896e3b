package compat

import (
	"bufio"
	"context"
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/tls"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/oauth"
	"github.com/twmb/franz-go/pkg/sasl/plain"
)

// unsecuredToken is an unsigned JWS ({"alg":"none"}), what Kafka's
// unsecured validator accepts in development.
func unsecuredToken(sub string, exp time.Time) string {
	enc := base64.RawURLEncoding.EncodeToString
	claims := fmt.Sprintf(`{"sub":%q,"iat":%d,"exp":%d}`, sub, time.Now().Unix(), exp.Unix())
	return enc([]byte(`{"alg":"none"}`)) + "." + enc([]byte(claims)) + "."
}

// jwksKey is an RSA signing key published in a JWKS file.
type jwksKey struct {
	kid string
	key *rsa.PrivateKey
}

func newJWKSKey(t *testing.T, kid string) jwksKey {
	t.Helper()
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	return jwksKey{kid: kid, key: k}
}

// writeJWKS writes the public key as a JSON Web Key Set and returns its path.
func writeJWKS(t *testing.T, dir string, k jwksKey) string {
	t.Helper()
	enc := base64.RawURLEncoding.EncodeToString
	doc := map[string]any{"keys": []map[string]string{{
		"kty": "RSA", "kid": k.kid, "use": "sig", "alg": "RS256",
		"n": enc(k.key.N.Bytes()), "e": enc(big.NewInt(int64(k.key.E)).Bytes()),
	}}}
	data, _ := json.Marshal(doc)
	path := filepath.Join(dir, "jwks.json")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// signedToken is an RS256 JWT signed by k.
func (k jwksKey) signedToken(t *testing.T, sub string, exp time.Time) string {
	t.Helper()
	enc := base64.RawURLEncoding.EncodeToString
	head := enc([]byte(fmt.Sprintf(`{"alg":"RS256","typ":"JWT","kid":%q}`, k.kid)))
	body := enc([]byte(fmt.Sprintf(`{"sub":%q,"iat":%d,"exp":%d}`, sub, time.Now().Unix(), exp.Unix())))
	digest := sha256.Sum256([]byte(head + "." + body))
	sig, err := rsa.SignPKCS1v15(rand.Reader, k.key, crypto.SHA256, digest[:])
	if err != nil {
		t.Fatal(err)
	}
	return head + "." + body + "." + enc(sig)
}

func oauthMech(token string) sasl.Mechanism { return oauth.Auth{Token: token}.AsMechanism() }

// namedMechanism renames a mechanism: a client asking for one the broker
// does not enable.
type namedMechanism struct {
	sasl.Mechanism
	name string
}

func (m namedMechanism) Name() string { return m.name }

// Each mechanism authenticates, on its listener, as the principal it
// names; each kind of failure is refused with the error Kafka answers and
// nothing is served.
func TestSecurityMechanismsAuthenticate(t *testing.T) {
	dir := t.TempDir()
	good, other := newJWKSKey(t, "k1"), newJWKSKey(t, "k1")
	jwks := writeJWKS(t, dir, good)
	sc := startSecureCluster(t, secureOpts{properties: []string{
		// SASL_PLAINTEXT validates signed tokens; SASL_SSL keeps the
		// unsecured validator of development setups.
		"listener.name.sasl_plaintext.sasl.oauthbearer.jwks.endpoint.url=file:" + jwks,
	}})
	n := sc.nodes[0]
	adm := sc.admin()
	topic := newTopic(t, adm, 1, 1, nil)
	ctx := context.Background()
	upsertSCRAM(t, adm, "alice", alicePassword, kadm.ScramSha256)
	createACLs(t, adm, kadm.NewACLs().Allow("User:alice").Topics(topic).Operations(kadm.OpWrite, kadm.OpDescribe))

	tlsOnly := kgo.DialTLSConfig(sc.tlsConfig(""))
	ok := []struct {
		name string
		addr string
		opts []kgo.Opt
	}{
		{"PLAIN over SASL_SSL", n.clientAddr, sc.plain("alice", alicePassword)},
		{"SCRAM-SHA-256 over SASL_SSL", n.clientAddr, sc.scram("alice", alicePassword, 256)},
		{"PLAIN over SASL_PLAINTEXT", n.saslPlainAddr, []kgo.Opt{kgo.SASL(plain.Auth{User: "alice", Pass: alicePassword}.AsMechanism())}},
		{"OAUTHBEARER unsecured over SASL_SSL", n.clientAddr, []kgo.Opt{tlsOnly, kgo.SASL(oauthMech(unsecuredToken("alice", time.Now().Add(time.Hour))))}},
		{"OAUTHBEARER signed (JWKS) over SASL_PLAINTEXT", n.saslPlainAddr, []kgo.Opt{kgo.SASL(oauthMech(good.signedToken(t, "alice", time.Now().Add(time.Hour))))}},
		{"client certificate over SSL", n.sslAddr, []kgo.Opt{kgo.DialTLSConfig(sc.tlsConfig("alice"))}},
	}
	for _, tc := range ok {
		t.Run(tc.name, func(t *testing.T) {
			cl := newClient(t, []string{tc.addr}, append(tc.opts, kgo.DefaultProduceTopic(topic), kgo.RecordRetries(2))...)
			pctx, cancel := context.WithTimeout(ctx, 15*time.Second)
			defer cancel()
			// The ACL names User:alice: producing proves the principal.
			must(t, cl.ProduceSync(pctx, &kgo.Record{Value: []byte(tc.name)}).FirstErr(), "produce as alice")
		})
	}

	refused := []struct {
		name string
		addr string
		opts []kgo.Opt
		want error
		text string
	}{
		{"wrong PLAIN password", n.clientAddr, sc.plain("alice", "not-it"), kerr.SaslAuthenticationFailed, "Invalid username or password"},
		{"wrong SCRAM password", n.clientAddr, sc.scram("admin", "not-it", 512), kerr.SaslAuthenticationFailed, "invalid credentials with SASL mechanism SCRAM-SHA-512"},
		{"unknown SCRAM user", n.clientAddr, sc.scram("nobody", "x", 256), kerr.SaslAuthenticationFailed, ""},
		{"unknown mechanism", n.clientAddr, []kgo.Opt{tlsOnly, kgo.SASL(namedMechanism{plain.Auth{User: "a", Pass: "b"}.AsMechanism(), "GSSAPI"})},
			kerr.UnsupportedSaslMechanism, ""},
		{"expired token", n.clientAddr, []kgo.Opt{tlsOnly, kgo.SASL(oauthMech(unsecuredToken("alice", time.Now().Add(-time.Minute))))},
			kerr.SaslAuthenticationFailed, "invalid_token"},
		{"token signed by another key", n.saslPlainAddr, []kgo.Opt{kgo.SASL(oauthMech(other.signedToken(t, "alice", time.Now().Add(time.Hour))))},
			kerr.SaslAuthenticationFailed, "invalid_token"},
		{"unsigned token where signatures are checked", n.saslPlainAddr, []kgo.Opt{kgo.SASL(oauthMech(unsecuredToken("alice", time.Now().Add(time.Hour))))},
			kerr.SaslAuthenticationFailed, "invalid_token"},
	}
	for _, tc := range refused {
		t.Run(tc.name, func(t *testing.T) {
			err := ping(t, tc.addr, tc.opts...)
			if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.text) {
				t.Fatalf("err = %v, want %v with %q", err, tc.want, tc.text)
			}
		})
	}
	t.Run("no client certificate on a required listener", func(t *testing.T) {
		if err := ping(t, n.sslAddr, tlsOnly); err == nil {
			t.Fatal("a client without a certificate was served")
		}
	})
	t.Run("request before authentication", func(t *testing.T) {
		requestBeforeAuthentication(t, n.saslPlainAddr)
	})
	waitFor(t, 10*time.Second, "failures logged", func() error {
		if logs := n.logs(); !strings.Contains(logs, `msg="authentication failed"`) || strings.Contains(logs, "not-it") {
			return fmt.Errorf("failures not logged, or a password was")
		}
		return nil
	})
}

// requestBeforeAuthentication sends ApiVersions (answered) and then
// Metadata (not answered: the connection closes) on a SASL listener.
func requestBeforeAuthentication(t *testing.T, addr string) {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	nc.SetDeadline(time.Now().Add(10 * time.Second))
	rd := bufio.NewReader(nc)
	av := kmsg.NewPtrApiVersionsRequest()
	av.SetVersion(3)
	av.ClientSoftwareName, av.ClientSoftwareVersion = "compat", "1"
	writeRequest(t, nc, 1, av)
	if corr, err := readResponseFrame(rd); err != nil || corr != 1 {
		t.Fatalf("ApiVersions before authentication: %d %v", corr, err)
	}
	md := kmsg.NewPtrMetadataRequest()
	md.SetVersion(9)
	writeRequest(t, nc, 2, md)
	if corr, err := readResponseFrame(rd); err == nil {
		t.Fatalf("Metadata before authentication was answered (correlation %d)", corr)
	}
}

func writeRequest(t *testing.T, w io.Writer, corr int32, req kmsg.Request) {
	t.Helper()
	buf := binary.BigEndian.AppendUint16(make([]byte, 4, 64), uint16(req.Key()))
	buf = binary.BigEndian.AppendUint16(buf, uint16(req.GetVersion()))
	buf = binary.BigEndian.AppendUint32(buf, uint32(corr))
	buf = binary.BigEndian.AppendUint16(buf, uint16(len("compat")))
	buf = append(buf, "compat"...)
	if req.IsFlexible() {
		buf = append(buf, 0)
	}
	buf = req.AppendTo(buf)
	binary.BigEndian.PutUint32(buf, uint32(len(buf)-4))
	if _, err := w.Write(buf); err != nil {
		t.Fatal(err)
	}
}

func readResponseFrame(rd *bufio.Reader) (int32, error) {
	frame, err := readFrame(rd)
	if err != nil {
		return 0, err
	}
	return int32(binary.BigEndian.Uint32(frame)), nil
}

// readFrame reads one response: the correlation id, then the rest.
func readFrame(rd *bufio.Reader) ([]byte, error) {
	var size [4]byte
	if _, err := io.ReadFull(rd, size[:]); err != nil {
		return nil, err
	}
	frame := make([]byte, binary.BigEndian.Uint32(size[:]))
	if _, err := io.ReadFull(rd, frame); err != nil {
		return nil, err
	}
	return frame, nil
}

// A renewed broker certificate is served to new connections without a
// restart (the keystore file changes; ssl.store.reload.interval.ms), and
// connections made before keep working.
func TestCertificateRotationWithoutRestart(t *testing.T) {
	sc := startSecureCluster(t, secureOpts{})
	n := sc.nodes[0]
	serial := func() string {
		conn, err := tls.Dial("tcp", n.clientAddr, &tls.Config{RootCAs: sc.caPool(), ServerName: "127.0.0.1"})
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		return conn.ConnectionState().PeerCertificates[0].SerialNumber.String()
	}
	before := serial()
	cl := sc.client(0, sc.scram("admin", adminPassword, 512)...)
	must(t, cl.Ping(context.Background()), "ping before the rotation")
	devCerts(t, sc.certs) // same CA, new certificates
	waitFor(t, 20*time.Second, "the new certificate served", func() error {
		if s := serial(); s == before {
			return fmt.Errorf("still serial %s", s)
		}
		return nil
	})
	must(t, cl.Ping(context.Background()), "ping after the rotation on the old client")
	must(t, ping(t, n.clientAddr, sc.scram("admin", adminPassword, 512)...), "a new connection after the rotation")
}

// KIP-368: connections.max.reauth.ms bounds a SASL session. franz-go
// re-authenticates in time and keeps working; a client that does not is
// closed, unanswered, at its first request after the session ended.
func TestSASLReauthentication(t *testing.T) {
	const lifetime = 1500 * time.Millisecond
	sc := startSecureCluster(t, secureOpts{properties: []string{
		fmt.Sprintf("listener.name.sasl_ssl.connections.max.reauth.ms=%d", lifetime.Milliseconds()),
		fmt.Sprintf("listener.name.sasl_plaintext.connections.max.reauth.ms=%d", lifetime.Milliseconds()),
	}})
	n := sc.nodes[0]
	topic := newTopic(t, sc.admin(), 1, 1, nil)
	cl := sc.client(0, sc.scram("admin", adminPassword, 512)...)
	for start := time.Now(); time.Since(start) < 2*lifetime+500*time.Millisecond; {
		must(t, produceAs(t, cl, topic), "produce across re-authentications")
	}

	nc, err := net.Dial("tcp", n.saslPlainAddr)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	nc.SetDeadline(time.Now().Add(30 * time.Second))
	rd := bufio.NewReader(nc)
	authenticatePlain(t, nc, rd, "alice", alicePassword)
	authenticated := time.Now()
	md := kmsg.NewPtrMetadataRequest()
	md.SetVersion(9)
	for corr := int32(10); ; corr++ {
		writeRequest(t, nc, corr, md)
		_, err := readResponseFrame(rd)
		elapsed := time.Since(authenticated)
		if err != nil {
			if elapsed < lifetime {
				t.Fatalf("closed after %v, before the session's %v ended: %v", elapsed, lifetime, err)
			}
			return
		}
		if elapsed > lifetime+5*time.Second {
			t.Fatalf("still served %v after the session's %v ended", elapsed-lifetime, lifetime)
		}
		time.Sleep(100 * time.Millisecond) // pace the requests: the condition is the broker's clock
	}
}

// authenticatePlain runs SaslHandshake v1 and SaslAuthenticate v1 (PLAIN).
func authenticatePlain(t *testing.T, nc net.Conn, rd *bufio.Reader, user, pass string) {
	t.Helper()
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.SetVersion(1)
	hs.Mechanism = "PLAIN"
	writeRequest(t, nc, 1, hs)
	if _, err := readResponseFrame(rd); err != nil {
		t.Fatal(err)
	}
	auth := kmsg.NewPtrSASLAuthenticateRequest()
	auth.SetVersion(1)
	auth.SASLAuthBytes = []byte("\x00" + user + "\x00" + pass)
	writeRequest(t, nc, 2, auth)
	if _, err := readResponseFrame(rd); err != nil {
		t.Fatal(err)
	}
}

// Kafka's dynamic listener reconfiguration: an IncrementalAlterConfigs of
// listener.name.<l>.ssl.keystore.location on one broker makes that
// listener serve the new certificate to new connections, without a restart
// and without the old keystore file changing; connections made before keep
// working.
func TestCertificateRotationByAlterConfigs(t *testing.T) {
	sc := startSecureCluster(t, secureOpts{})
	n := sc.nodes[0]
	serial := func() string {
		conn, err := tls.Dial("tcp", n.clientAddr, &tls.Config{RootCAs: sc.caPool(), ServerName: "127.0.0.1"})
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		return conn.ConnectionState().PeerCertificates[0].SerialNumber.String()
	}
	before := serial()
	cl := sc.client(0, sc.scram("admin", adminPassword, 512)...)
	must(t, cl.Ping(context.Background()), "ping before the rotation")

	// New certificates from the same CA, in another directory: the files
	// the broker started with stay as they are.
	next := filepath.Join(t.TempDir(), "next")
	if out, err := exec.Command("cp", "-r", sc.certs, next).CombinedOutput(); err != nil {
		t.Fatalf("copying the CA: %v\n%s", err, out)
	}
	devCerts(t, next)
	keystore := filepath.Join(next, "broker.keystore.pem")
	res, err := sc.admin().AlterBrokerConfigs(ctxTimeout(t, 30*time.Second), []kadm.AlterConfig{{
		Op: kadm.SetConfig, Name: "listener.name.sasl_ssl.ssl.keystore.location", Value: kmsg.StringPtr(keystore),
	}}, n.id)
	must(t, err, "AlterConfigs of the listener's keystore")
	for _, r := range res {
		if r.Err != nil {
			t.Fatalf("AlterConfigs on %s: %v %s", r.Name, r.Err, r.ErrMessage)
		}
	}
	waitFor(t, 20*time.Second, "the keystore set by AlterConfigs served", func() error {
		if s := serial(); s == before {
			return fmt.Errorf("still serial %s", s)
		}
		return nil
	})
	must(t, cl.Ping(context.Background()), "ping after the rotation on the old client")
	must(t, ping(t, n.clientAddr, sc.scram("admin", adminPassword, 512)...), "a new connection after the rotation")
}
