package protocol

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl"
)

// ClientSecurity is how a broker's own clients (replica fetchers,
// controller forwarding, the metadata quorum) reach a secured listener:
// TLS and SASL, as any Kafka client would. The zero value is PLAINTEXT.
type ClientSecurity struct {
	// TLS returns the config to dial serverName with (the host of the
	// address); nil for plaintext. It is called on every dial, so a
	// reloaded keystore or truststore is used from the next connection on.
	TLS func(serverName string) (*tls.Config, error)
	// SASL is the mechanism to authenticate with (franz-go's
	// pkg/sasl/plain, scram or oauth); nil: no SASL.
	SASL sasl.Mechanism
}

// ClientOption tunes a Client (NewClient, NewPool).
type ClientOption func(*Client)

// WithSecurity makes the client dial with TLS and authenticate with SASL
// as sec says.
func WithSecurity(sec ClientSecurity) ClientOption {
	return func(c *Client) { c.security = sec }
}

// ErrAuthentication wraps a refused SASL authentication.
var ErrAuthentication = errors.New("protocol: SASL authentication failed")

// dialLocked opens the connection: TCP, then TLS when configured.
func (c *Client) dialLocked(ctx context.Context) (net.Conn, error) {
	return c.security.DialTLS(ctx, c.addr, c.dialer.Timeout)
}

// DialTLS opens a TCP connection to addr and, when sec has TLS, runs the
// TLS handshake (the server name is addr's host), all within timeout.
func (sec ClientSecurity) DialTLS(ctx context.Context, addr string, timeout time.Duration) (net.Conn, error) {
	d := net.Dialer{Timeout: timeout}
	nc, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("dialing %s: %w", addr, err)
	}
	if sec.TLS == nil {
		return nc, nil
	}
	host, _, _ := net.SplitHostPort(addr)
	cfg, err := sec.TLS(host)
	if err != nil {
		nc.Close()
		return nil, fmt.Errorf("TLS config for %s: %w", addr, err)
	}
	tc := tls.Client(nc, cfg)
	hctx, cancel := context.WithTimeout(ctx, timeout)
	err = tc.HandshakeContext(hctx)
	cancel()
	if err != nil {
		nc.Close()
		return nil, fmt.Errorf("TLS handshake with %s: %w", addr, err)
	}
	return tc, nil
}

// AuthenticateConn runs the client side of a SASL exchange with mech on
// nc, a connection that carries another protocol once authenticated (the
// controller's Raft streams). The server sends nothing after its last SASL
// answer until the client speaks, so nothing of that protocol is read
// here.
func AuthenticateConn(ctx context.Context, nc net.Conn, addr string, mech sasl.Mechanism) error {
	defer nc.SetDeadline(time.Time{}) // the round trips set deadlines
	c := &Client{addr: addr, clientID: "kbroker", maxFrame: 1 << 20, security: ClientSecurity{SASL: mech},
		nc: nc, rd: bufio.NewReaderSize(nc, 4096)}
	return c.authenticateLocked(ctx)
}

// authenticateLocked runs the SASL exchange on the fresh connection with
// SaslHandshake v1 and SaslAuthenticate v1 (KIP-152), which every kbroker
// and Kafka since 1.0 serves. A session lifetime (KIP-368) makes the
// client reconnect, and so authenticate again, before it ends.
func (c *Client) authenticateLocked(ctx context.Context) error {
	mech := c.security.SASL
	if mech == nil {
		return nil
	}
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.SetVersion(1)
	hs.Mechanism = mech.Name()
	resp, err := c.roundTripLocked(ctx, hs)
	if err != nil {
		return fmt.Errorf("SaslHandshake to %s: %w", c.addr, err)
	}
	if err := kerr.ErrorForCode(resp.(*kmsg.SASLHandshakeResponse).ErrorCode); err != nil {
		return fmt.Errorf("%w: SaslHandshake %s to %s: %v (enabled: %v)", ErrAuthentication, mech.Name(), c.addr, err,
			resp.(*kmsg.SASLHandshakeResponse).SupportedMechanisms)
	}
	start := time.Now()
	sess, msg, err := mech.Authenticate(ctx, c.addr)
	if err != nil {
		return fmt.Errorf("%w: %s to %s: %v", ErrAuthentication, mech.Name(), c.addr, err)
	}
	for done := false; !done || len(msg) > 0; {
		auth := kmsg.NewPtrSASLAuthenticateRequest()
		auth.SetVersion(1)
		auth.SASLAuthBytes = msg
		resp, err := c.roundTripLocked(ctx, auth)
		if err != nil {
			return fmt.Errorf("SaslAuthenticate to %s: %w", c.addr, err)
		}
		ar := resp.(*kmsg.SASLAuthenticateResponse)
		if ar.ErrorCode != 0 {
			text := ""
			if ar.ErrorMessage != nil {
				text = *ar.ErrorMessage
			}
			return fmt.Errorf("%w: %s to %s: %v: %s", ErrAuthentication, mech.Name(), c.addr, kerr.ErrorForCode(ar.ErrorCode), text)
		}
		if ar.SessionLifetimeMillis > 0 {
			// Reconnect at 90% of the lifetime, counted from before the
			// exchange, to stay clear of the server's deadline.
			c.reauthAt = start.Add(time.Duration(ar.SessionLifetimeMillis) * time.Millisecond * 9 / 10)
		}
		msg = nil
		if !done {
			if done, msg, err = sess.Challenge(ar.SASLAuthBytes); err != nil {
				return fmt.Errorf("%w: %s to %s: %v", ErrAuthentication, mech.Name(), c.addr, err)
			}
		}
	}
	return nil
}
