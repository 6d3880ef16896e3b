package sasl

import "fmt"

// State is where a Conversation is.
type State int

const (
	StateInitial    State = iota // no message yet
	StateInProgress              // challenges exchanged, not yet done
	StateComplete                // authenticated
	StateFailed                  // over, with an error
)

func (s State) String() string {
	switch s {
	case StateInitial:
		return "initial"
	case StateInProgress:
		return "in-progress"
	case StateComplete:
		return "complete"
	case StateFailed:
		return "failed"
	}
	return fmt.Sprintf("State(%d)", int(s))
}

// Conversation runs one Exchange as a state machine: initial ->
// in-progress -> complete | failed, at most MaxSteps client messages, and
// nothing accepted once it is over. It is not safe for concurrent use: a
// connection's requests are handled one at a time.
type Conversation struct {
	mech    Mechanism
	ex      Exchange
	state   State
	steps   int
	outcome Outcome
}

// NewConversation starts an exchange of m.
func NewConversation(m Mechanism) *Conversation {
	return &Conversation{mech: m, ex: m.Start()}
}

// Mechanism is the mechanism's name.
func (c *Conversation) Mechanism() string { return c.mech.Name() }

// State is the current state.
func (c *Conversation) State() State { return c.state }

// Outcome is what the exchange established; valid in StateComplete.
func (c *Conversation) Outcome() Outcome { return c.outcome }

// Step hands the next client message to the exchange. On an error the
// conversation is failed and the reply, if any, is what Kafka would have
// sent before failing (nil almost always).
func (c *Conversation) Step(in []byte) ([]byte, *AuthError) {
	switch c.state {
	case StateComplete, StateFailed:
		return nil, c.fail(Fail("%s exchange already %s", c.mech.Name(), c.state))
	}
	c.steps++
	if c.steps > c.mech.MaxSteps() {
		return nil, c.fail(Fail("%s exchange exceeded %d messages", c.mech.Name(), c.mech.MaxSteps()))
	}
	out, done, err := c.ex.Step(in)
	if err != nil {
		ae, ok := err.(*AuthError)
		if !ok {
			ae = Fail("%s: %v", c.mech.Name(), err)
		}
		return out, c.fail(ae)
	}
	if done {
		c.state = StateComplete
		c.outcome = c.ex.Outcome()
	} else {
		c.state = StateInProgress
	}
	return out, nil
}

func (c *Conversation) fail(err *AuthError) *AuthError {
	c.state = StateFailed
	return err
}
