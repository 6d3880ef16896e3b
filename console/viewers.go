package console

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kbroker/kbroker/admin"
)

// A viewer is one person looking at the console: the Kafka connection
// every read of theirs goes through, and the samples (end offsets, group
// lag) taken with it for their charts. Without Options.Login there is one
// viewer, anonymous, for everyone. With it, each request carries HTTP Basic
// credentials, which are the SASL user and password of that viewer's
// connection: the broker authenticates them (a wrong password is a 401
// here) and authorizes each read against that user's ACLs, so a page shows
// what its user may see through a Kafka client and nothing more (Metadata
// leaves out the topics it may not DESCRIBE, a group it may not DESCRIBE
// is GROUP_AUTHORIZATION_FAILED, the message browser needs READ). Samples
// are never shared between viewers.
type viewer struct {
	user    string // "" for the anonymous viewer
	client  *admin.Client
	samples *sampler

	lastUsed time.Time // guarded by viewers.mu; idle viewers are closed
}

// viewers are the console's viewers: the anonymous one, or one per
// authenticated user and password.
type viewers struct {
	base admin.Config // the listener and TLS; no user
	// mechanisms, with login, are the SASL mechanisms a viewer's password
	// is tried with, in order (a user may hold a credential for one only).
	mechanisms []string
	now        func() time.Time
	idle       time.Duration
	log        func(msg string, args ...any)

	mu    sync.Mutex
	anon  *viewer              // without login
	byKey map[[32]byte]*viewer // with login: by hash of user and password
}

// errUnauthenticated is a request without credentials the broker accepts.
var errUnauthenticated = errors.New("console: log in with a Kafka (SASL) user and password")

// authRealm is the Basic challenge the console answers a 401 with.
const authRealm = `Basic realm="kbroker console", charset="UTF-8"`

// newViewers builds the viewers of a console: with mechanisms, logged-in
// ones; without, one anonymous viewer connected with base.
func newViewers(base admin.Config, mechanisms []string, now func() time.Time, idle time.Duration, log func(string, ...any)) (*viewers, error) {
	vs := &viewers{base: base, mechanisms: mechanisms, now: now, idle: idle, log: log, byKey: map[[32]byte]*viewer{}}
	if len(mechanisms) == 0 {
		cl, err := admin.Dial(base)
		if err != nil {
			return nil, err
		}
		vs.anon = &viewer{client: cl, samples: newSampler(now)}
	}
	return vs, nil
}

// of returns the request's viewer, logging it in first when the console
// requires a login. The error is errUnauthenticated, or why the cluster
// could not be asked.
func (vs *viewers) of(r *http.Request) (*viewer, error) {
	if vs.anon != nil {
		vs.mu.Lock()
		vs.anon.lastUsed = vs.now()
		vs.mu.Unlock()
		return vs.anon, nil
	}
	user, pass, ok := r.BasicAuth()
	if !ok || user == "" {
		return nil, errUnauthenticated
	}
	key := credentialKey(user, pass)
	vs.mu.Lock()
	v := vs.byKey[key]
	if v != nil {
		v.lastUsed = vs.now()
	}
	vs.mu.Unlock()
	if v != nil {
		return v, nil
	}
	return vs.login(r.Context(), key, user, pass, r.RemoteAddr)
}

// login has the broker authenticate user and pass, with each mechanism in
// turn until one is accepted, and keeps the viewer for its next requests.
func (vs *viewers) login(ctx context.Context, key [32]byte, user, pass, remote string) (*viewer, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	var refusals []error
	for _, mech := range vs.mechanisms {
		cfg := vs.base
		cfg.SASLMechanism, cfg.SASLUsername, cfg.SASLPassword = mech, user, pass
		cl, err := admin.Dial(cfg)
		if err != nil {
			return nil, fmt.Errorf("console: %w", err)
		}
		wctx, stop := cl.Watch(ctx)
		err = cl.Kgo().Ping(wctx)
		stop()
		if err == nil {
			return vs.keep(key, &viewer{user: user, client: cl, samples: newSampler(vs.now), lastUsed: vs.now()}), nil
		}
		cl.Close()
		if !refused(err) {
			return nil, cl.Explain(wctx, err)
		}
		refusals = append(refusals, fmt.Errorf("%s: %w", mech, err))
	}
	vs.log("console login refused", "user", user, "remote", remote, "err", errors.Join(refusals...))
	return nil, errUnauthenticated
}

// refused reports whether err is the broker refusing a SASL login (or
// closing the connection on one, as some brokers do).
func refused(err error) bool {
	return errors.Is(err, kerr.SaslAuthenticationFailed) || errors.Is(err, kerr.IllegalSaslState) ||
		errors.Is(err, kerr.UnsupportedSaslMechanism) || errors.Is(err, io.EOF)
}

// keep stores a logged-in viewer; a concurrent login of the same
// credentials that stored one first wins, and v is closed.
func (vs *viewers) keep(key [32]byte, v *viewer) *viewer {
	vs.mu.Lock()
	defer vs.mu.Unlock()
	if prev := vs.byKey[key]; prev != nil {
		v.client.Close()
		return prev
	}
	vs.byKey[key] = v
	return v
}

// sampling returns the viewers whose charts are being looked at.
func (vs *viewers) sampling() []*viewer {
	vs.mu.Lock()
	defer vs.mu.Unlock()
	var out []*viewer
	if vs.anon != nil {
		out = append(out, vs.anon)
	}
	for _, v := range vs.byKey {
		out = append(out, v)
	}
	return slices.DeleteFunc(out, func(v *viewer) bool { return !v.samples.active() })
}

// expire closes the authenticated viewers idle for longer than idle.
func (vs *viewers) expire() {
	vs.mu.Lock()
	var gone []*viewer
	for k, v := range vs.byKey {
		if vs.now().Sub(v.lastUsed) > vs.idle {
			delete(vs.byKey, k)
			gone = append(gone, v)
		}
	}
	vs.mu.Unlock()
	for _, v := range gone {
		v.client.Close()
	}
}

// closeAll closes every viewer's connection.
func (vs *viewers) closeAll() {
	vs.mu.Lock()
	all := make([]*viewer, 0, len(vs.byKey)+1)
	if vs.anon != nil {
		all = append(all, vs.anon)
	}
	for k, v := range vs.byKey {
		all = append(all, v)
		delete(vs.byKey, k)
	}
	vs.mu.Unlock()
	for _, v := range all {
		v.client.Close()
	}
}

// credentialKey keys a viewer by its credentials without keeping the
// password itself in the map.
func credentialKey(user, pass string) [32]byte {
	return sha256.Sum256([]byte(user + "\x00" + pass))
}

type viewerKey struct{}

// withViewer is ctx carrying the request's viewer.
func withViewer(ctx context.Context, v *viewer) context.Context {
	return context.WithValue(ctx, viewerKey{}, v)
}

// viewerOf is the viewer of a request's context.
func viewerOf(ctx context.Context) *viewer {
	return ctx.Value(viewerKey{}).(*viewer)
}

// clientOf is the Kafka connection of a request's viewer.
func clientOf(ctx context.Context) *admin.Client { return viewerOf(ctx).client }
