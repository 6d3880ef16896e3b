package acl

import (
	"context"
	"log/slog"
	"strconv"
	"strings"
	"sync/atomic"
)

// LevelTrace is the level of the log lines Kafka writes at TRACE: denials
// and grants that only filter (LogIfDenied/LogIfAllowed false).
const LevelTrace = slog.LevelDebug - 4

// Options tune an Authorizer.
type Options struct {
	// Log receives Kafka's authorizer log lines (kafka.authorizer.logger):
	// denials at info, grants at debug, filtering decisions at LevelTrace.
	Log *slog.Logger
	// OnDeny, if set, is called for every denial (a metric).
	OnDeny func(req Request, act Action)
}

// Authorizer is Kafka's StandardAuthorizer: Config plus the current ACL
// Set, swapped atomically when the metadata log changes them. Decisions
// never lock.
type Authorizer struct {
	cfg  Config
	opts Options
	acls atomic.Pointer[Set] // nil until the first SetACLs
}

// NewAuthorizer returns an authorizer with no ACLs loaded: until SetACLs,
// only super users are allowed.
func NewAuthorizer(cfg Config, opts Options) *Authorizer {
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	cfg.SuperUsers = append([]string(nil), cfg.SuperUsers...)
	return &Authorizer{cfg: cfg, opts: opts}
}

// SetACLs installs the ACLs the metadata image holds.
func (a *Authorizer) SetACLs(s *Set) { a.acls.Store(s) }

// ACLs returns the current ACL set (nil before SetACLs).
func (a *Authorizer) ACLs() *Set { return a.acls.Load() }

// Authorize decides each action, logs and counts as Kafka does.
func (a *Authorizer) Authorize(req Request, actions ...Action) []bool {
	set := a.acls.Load()
	out := make([]bool, len(actions))
	for i, act := range actions {
		d := Decide(&a.cfg, set, req, act)
		a.record(req, act, d)
		out[i] = d.Allowed
	}
	return out
}

// Allowed decides one action.
func (a *Authorizer) Allowed(req Request, act Action) bool {
	return a.Authorize(req, act)[0]
}

func (a *Authorizer) record(req Request, act Action, d Decision) {
	level := LevelTrace
	switch {
	case d.Allowed && act.LogIfAllowed:
		level = slog.LevelDebug
	case !d.Allowed && act.LogIfDenied:
		level = slog.LevelInfo
	}
	if !d.Allowed && a.opts.OnDeny != nil {
		a.opts.OnDeny(req, act)
	}
	if a.opts.Log.Enabled(context.Background(), level) {
		a.opts.Log.Log(context.Background(), level, AuditLine(req, act, d))
	}
}

// AuditLine is the line Kafka's StandardAuthorizer writes to
// kafka.authorizer.logger for a decision.
func AuditLine(req Request, act Action, d Decision) string {
	verdict := "Denied"
	if d.Allowed {
		verdict = "Allowed"
	}
	var b strings.Builder
	b.WriteString("Principal = " + req.Principal.String())
	b.WriteString(" is " + verdict)
	b.WriteString(" operation = " + act.Operation.String())
	b.WriteString(" from host = " + req.Host)
	b.WriteString(" on resource = " + act.Type.LogName() + ":" + PatternLiteral.String() + ":" + act.Name)
	b.WriteString(" for request = " + req.API)
	b.WriteString(" with resourceRefCount = " + strconv.Itoa(act.RefCount))
	b.WriteString(" based on rule " + d.Rule())
	return b.String()
}
