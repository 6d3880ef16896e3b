package console

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/kbroker/kbroker/admin"
)

// Options configure a console.
type Options struct {
	// ClientAddr is the client listener the console connects to with
	// kadm (host:port; a wildcard host means loopback).
	ClientAddr string
	// Client overrides the connection settings (tests; a secured
	// listener). Its Brokers, when set, win over ClientAddr.
	Client *admin.Config
	// Login, the SASL mechanisms of Client's listener with a password
	// (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512), makes every request
	// authenticate with HTTP Basic credentials, used as the SASL user and
	// password of that viewer's own connection (each mechanism tried in
	// turn): the broker authenticates them and its ACLs decide what each
	// viewer sees (viewers.go). Empty: no login, one anonymous connection.
	Login []string
	// IdleTimeout closes a logged-in viewer's connection after this long
	// without a request (default 10 minutes).
	IdleTimeout time.Duration
	// Gatherer is the broker's own metrics registry, read for the
	// produce and fetch throughput of this broker.
	Gatherer prometheus.Gatherer
	NodeID   int32
	Logger   *slog.Logger
	// Prefix is where the console is mounted (default /ui).
	Prefix string
	// Interval is the sampling period of the charts (default 2 s).
	Interval time.Duration
	// Now is the clock (default time.Now).
	Now func() time.Time
}

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// Console is the web console: read-only pages over kadm, and a sampler for
// the charts. Every handler only reads, through its viewer's connection.
type Console struct {
	opts    Options
	viewers *viewers
	pages   map[string]*page
	mux     *http.ServeMux
	samples *sampler // this broker's throughput, from its own metrics

	stopOnce sync.Once
	cancel   context.CancelFunc // stops the sampler
	done     chan struct{}      // closed when the sampler has stopped
}

// New builds a console and starts its sampler; Close stops it.
func New(opts Options) (*Console, error) {
	if opts.Prefix == "" {
		opts.Prefix = "/ui"
	}
	if opts.Interval <= 0 {
		opts.Interval = 2 * time.Second
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.IdleTimeout <= 0 {
		opts.IdleTimeout = 10 * time.Minute
	}
	cfg := admin.DefaultConfig()
	cfg.ClientID, cfg.RequestTimeout = "kbroker-console", 5*time.Second
	cfg.Brokers = []string{loopback(opts.ClientAddr)}
	if opts.Client != nil {
		cfg = *opts.Client
	}
	if len(cfg.Brokers) == 0 {
		cfg.Brokers = []string{loopback(opts.ClientAddr)}
	}
	pages, err := parsePages()
	if err != nil {
		return nil, err
	}
	vs, err := newViewers(cfg, opts.Login, opts.Now, opts.IdleTimeout, opts.Logger.Info)
	if err != nil {
		return nil, fmt.Errorf("console: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	c := &Console{opts: opts, viewers: vs, pages: pages, cancel: cancel, done: make(chan struct{})}
	c.samples = newSampler(opts.Now)
	c.routes()
	go c.sampleLoop(ctx)
	return c, nil
}

// Mount serves a console under /ui on mux and returns its Close, for the
// broker's metrics listener. A console that cannot be built is logged and
// left out: the metrics endpoint still serves.
func Mount(mux *http.ServeMux, opts Options) (closeFn func()) {
	c, err := New(opts)
	if err != nil {
		if opts.Logger != nil {
			opts.Logger.Error("web console disabled", "err", err)
		}
		return func() {}
	}
	mux.Handle(c.opts.Prefix+"/", c)
	mux.Handle(c.opts.Prefix, http.RedirectHandler(c.opts.Prefix+"/", http.StatusFound))
	return c.Close
}

// ServeHTTP serves the console's pages to their viewer: with Login, one
// the broker authenticated (401 and a Basic challenge otherwise).
func (c *Console) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Content-Security-Policy", "default-src 'self'; style-src 'self'; img-src 'self' data:")
	v, err := c.viewers.of(r)
	switch {
	case errors.Is(err, errUnauthenticated):
		w.Header().Set("WWW-Authenticate", authRealm)
		http.Error(w, err.Error(), http.StatusUnauthorized)
		return
	case err != nil:
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	v.samples.touch()
	c.mux.ServeHTTP(w, r.WithContext(withViewer(r.Context(), v)))
}

// Close stops the sampler and closes the viewers' connections.
func (c *Console) Close() {
	c.stopOnce.Do(func() {
		c.cancel()
		<-c.done
		c.viewers.closeAll()
	})
}

func (c *Console) routes() {
	p := c.opts.Prefix
	m := http.NewServeMux()
	m.HandleFunc("GET "+p+"/{$}", c.page("overview", c.overview))
	m.HandleFunc("GET "+p+"/topics", c.page("topics", c.topics))
	m.HandleFunc("GET "+p+"/topics/{topic}", c.page("topic", c.topic))
	m.HandleFunc("GET "+p+"/groups", c.page("groups", c.groups))
	m.HandleFunc("GET "+p+"/groups/{group}", c.page("group", c.group))
	m.HandleFunc("GET "+p+"/messages", c.page("messages", c.messages))
	m.HandleFunc("GET "+p+"/risk", c.page("risk", c.risk))
	m.HandleFunc("GET "+p+"/api/overview", c.api(c.overviewLive))
	m.HandleFunc("GET "+p+"/api/groups/{group}/lag", c.api(c.groupLag))
	static, _ := fs.Sub(staticFS, "static")
	m.Handle("GET "+p+"/static/", http.StripPrefix(p+"/static/", http.FileServerFS(static)))
	m.HandleFunc(p+"/", func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			http.Error(w, "the console is read-only", http.StatusMethodNotAllowed)
			return
		}
		http.NotFound(w, r)
	})
	c.mux = m
}

// ctx bounds one page's requests to the cluster; it carries the viewer.
func (c *Console) ctx(r *http.Request) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithTimeout(r.Context(), 5*time.Second)
	wctx, stop := clientOf(ctx).Watch(ctx)
	return wctx, func() { stop(); cancel() }
}

// loopback turns a listener address with a wildcard host into one a
// client on this host can dial.
func loopback(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return addr
	}
	switch host {
	case "", "0.0.0.0":
		host = "127.0.0.1"
	case "::":
		host = "::1"
	}
	return net.JoinHostPort(host, port)
}
