package tlsconf

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// Reloader keeps a listener's TLS material current without a restart:
// when its store files change (Check, or Run polling) or when new settings
// arrive (Update, for AlterConfigs of listener.name.<l>.ssl.*). Live
// listeners use Config, whose GetConfigForClient hands every new handshake
// the current material; established connections keep theirs, as in Kafka.
// A reload that fails keeps the old material and reports the error.
type Reloader struct {
	fsys FS
	log  *slog.Logger

	mu       sync.Mutex // guards settings and hashes; held across a reload
	settings Settings
	hashes   [2][32]byte // of the keystore and truststore files

	cur atomic.Pointer[loaded]
}

type loaded struct {
	material *Material
	server   *tls.Config
}

// NewReloader loads s; an error means the listener cannot start.
func NewReloader(s Settings, fsys FS, log *slog.Logger) (*Reloader, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	r := &Reloader{fsys: fsys, log: log}
	r.mu.Lock()
	defer r.mu.Unlock()
	l, hashes, err := r.loadLocked(s)
	if err != nil {
		return nil, err
	}
	r.settings, r.hashes = s, hashes
	r.cur.Store(l)
	return r, nil
}

func (r *Reloader) loadLocked(s Settings) (*loaded, [2][32]byte, error) {
	var hashes [2][32]byte
	m, err := Load(s, r.fsys)
	if err != nil {
		return nil, hashes, err
	}
	server, err := ServerConfig(m, s)
	if err != nil {
		return nil, hashes, err
	}
	hashes = r.fileHashes(s)
	return &loaded{material: m, server: server}, hashes, nil
}

func (r *Reloader) fileHashes(s Settings) [2][32]byte {
	var out [2][32]byte
	for i, name := range []string{s.KeystoreLocation, s.TruststoreLocation} {
		if name == "" {
			continue
		}
		if b, err := r.fsys.ReadFile(name); err == nil {
			out[i] = sha256.Sum256(b)
		}
	}
	return out
}

// Config is the tls.Config to listen with: each handshake gets the
// current material.
func (r *Reloader) Config() *tls.Config {
	return &tls.Config{GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) {
		return r.cur.Load().server, nil
	}}
}

// ClientConfig is a client config from the current material, for one dial.
func (r *Reloader) ClientConfig(serverName string) (*tls.Config, error) {
	r.mu.Lock()
	s := r.settings
	r.mu.Unlock()
	return ClientConfig(r.cur.Load().material, s, serverName)
}

// Material is the current key and trust material.
func (r *Reloader) Material() *Material { return r.cur.Load().material }

// Check reloads when a store file's content changed, and reports whether
// it did.
func (r *Reloader) Check() (bool, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.fileHashes(r.settings) == r.hashes {
		return false, nil
	}
	return true, r.swapLocked(r.settings)
}

// Update installs new settings (dynamic reconfiguration). As Kafka's
// SslFactory, a new keystore certificate must keep the subject DN and the
// subject alternative names unless ssl.allow.dn.changes /
// ssl.allow.san.changes say otherwise.
func (r *Reloader) Update(s Settings) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.swapLocked(s)
}

func (r *Reloader) swapLocked(s Settings) error {
	l, hashes, err := r.loadLocked(s)
	if err != nil {
		return err
	}
	if err := compatible(r.cur.Load().material, l.material, s); err != nil {
		return err
	}
	r.settings, r.hashes = s, hashes
	r.cur.Store(l)
	r.log.Info("TLS material reloaded", "subject", l.material.Certificate.Leaf.Subject.String(),
		"not_after", l.material.Certificate.Leaf.NotAfter)
	return nil
}

func compatible(old, next *Material, s Settings) error {
	o, n := old.Certificate.Leaf, next.Certificate.Leaf
	if !s.AllowDNChanges && !bytes.Equal(o.RawSubject, n.RawSubject) {
		return fmt.Errorf("tlsconf: Keystore DistinguishedName does not match: existing={%s}, new={%s}", o.Subject, n.Subject)
	}
	if !s.AllowSANChanges && (!slices.Equal(o.DNSNames, n.DNSNames) || !slices.EqualFunc(o.IPAddresses, n.IPAddresses, net.IP.Equal)) {
		return fmt.Errorf("tlsconf: Keystore SubjectAltNames do not match: existing=%v %v, new=%v %v", o.DNSNames, o.IPAddresses, n.DNSNames, n.IPAddresses)
	}
	return nil
}

// Run calls Check every interval until ctx is done; the caller owns the
// goroutine. tick is time.NewTicker's channel in production, a test's
// channel in tests.
func (r *Reloader) Run(ctx context.Context, tick <-chan time.Time) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick:
			if changed, err := r.Check(); err != nil {
				r.log.Warn("TLS store files changed but do not load; keeping the current certificate", "err", err)
			} else if changed {
				r.log.Info("TLS store files changed; new handshakes use the new certificate")
			}
		}
	}
}
