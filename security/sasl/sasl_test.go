package sasl

import (
	"errors"
	"testing"
	"time"
)

// scripted is an Exchange that succeeds after n messages, or fails on one
// equal to "bad".
type scripted struct {
	n, seen int
}

func (s *scripted) Step(in []byte) ([]byte, bool, error) {
	s.seen++
	if string(in) == "bad" {
		return nil, false, FailPublic("Authentication failed: Invalid username or password", "wrong password for alice")
	}
	if string(in) == "oops" {
		return nil, false, errors.New("plain error")
	}
	return []byte("ok"), s.seen == s.n, nil
}

func (s *scripted) Outcome() Outcome { return Outcome{AuthorizationID: "alice"} }

type mech struct{ n, max int }

func (m mech) Name() string    { return "TEST" }
func (m mech) MaxSteps() int   { return m.max }
func (m mech) Start() Exchange { return &scripted{n: m.n} }

func TestConversationStates(t *testing.T) {
	c := NewConversation(mech{n: 2, max: 2})
	if c.State() != StateInitial {
		t.Fatal(c.State())
	}
	if _, err := c.Step(nil); err != nil || c.State() != StateInProgress {
		t.Fatalf("%v %s", err, c.State())
	}
	if _, err := c.Step(nil); err != nil || c.State() != StateComplete || c.Outcome().AuthorizationID != "alice" {
		t.Fatalf("%v %s", err, c.State())
	}
	if _, err := c.Step(nil); err == nil || c.State() != StateFailed {
		t.Fatal("step after completion accepted")
	}
}

func TestConversationMaxSteps(t *testing.T) {
	c := NewConversation(mech{n: 5, max: 2})
	c.Step(nil)
	c.Step(nil)
	if _, err := c.Step(nil); err == nil || c.State() != StateFailed {
		t.Fatal("third message accepted")
	}
}

func TestConversationErrors(t *testing.T) {
	c := NewConversation(mech{n: 2, max: 2})
	_, err := c.Step([]byte("bad"))
	if err == nil || err.ClientMessage("PLAIN", false) != "Authentication failed: Invalid username or password" {
		t.Fatalf("got %v", err)
	}
	c = NewConversation(mech{n: 2, max: 2})
	_, err = c.Step([]byte("oops"))
	if err == nil || err.ClientMessage("SCRAM-SHA-256", true) !=
		"Authentication failed during re-authentication due to invalid credentials with SASL mechanism SCRAM-SHA-256" {
		t.Fatalf("got %v", err)
	}
}

func TestRegistry(t *testing.T) {
	r, err := NewRegistry(mech{})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := r.Lookup("TEST"); !ok {
		t.Fatal("lookup")
	}
	if _, ok := r.Lookup("test"); ok {
		t.Fatal("names are case-sensitive")
	}
	if _, err := NewRegistry(mech{}, mech{}); err == nil {
		t.Fatal("duplicate accepted")
	}
	if got := ParseEnabledMechanisms(" PLAIN, SCRAM-SHA-256 ,,"); len(got) != 2 || got[1] != ScramSHA256 {
		t.Fatal(got)
	}
}

func TestSessionLifetime(t *testing.T) {
	now := time.Unix(1000, 0)
	for _, c := range []struct {
		maxReauth time.Duration
		expiry    time.Time
		want      time.Duration
		expires   bool
	}{
		{0, time.Time{}, 0, false},
		{time.Hour, time.Time{}, time.Hour, true},
		{0, now.Add(10 * time.Minute), 10 * time.Minute, true},
		{time.Hour, now.Add(10 * time.Minute), 10 * time.Minute, true},
		{time.Minute, now.Add(10 * time.Minute), time.Minute, true},
		{time.Hour, now.Add(-time.Second), 0, true},
	} {
		got, expires := SessionLifetime(now, c.maxReauth, c.expiry)
		if got != c.want || expires != c.expires {
			t.Errorf("%v %v: got %v %v", c.maxReauth, c.expiry, got, expires)
		}
	}
}
