package admin

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// User is a user with SCRAM credentials (the passwords themselves are
// never shown: brokers keep only salted keys).
type User struct {
	Name       string          `json:"user"`
	Mechanisms []UserMechanism `json:"mechanisms"`
}

// UserMechanism is one mechanism a user has a credential for.
type UserMechanism struct {
	Mechanism  string `json:"mechanism"` // SCRAM-SHA-256 or SCRAM-SHA-512
	Iterations int32  `json:"iterations"`
}

// UserResult is the outcome of changing one user's credential.
type UserResult struct {
	User      string `json:"user"`
	Mechanism string `json:"mechanism"`
	Error     string `json:"error,omitempty"`
}

// Iteration bounds of a SCRAM credential (Kafka's ScramMechanism).
const (
	MinScramIterations = 4096
	MaxScramIterations = 16384
)

// ParseScramMechanism reads SCRAM-SHA-256 or SCRAM-SHA-512 (any case).
func ParseScramMechanism(s string) (kadm.ScramMechanism, error) {
	switch strings.ToUpper(strings.TrimSpace(s)) {
	case "SCRAM-SHA-256":
		return kadm.ScramSha256, nil
	case "SCRAM-SHA-512":
		return kadm.ScramSha512, nil
	}
	return 0, fmt.Errorf("unknown SCRAM mechanism %q (want SCRAM-SHA-256 or SCRAM-SHA-512)", s)
}

// Users lists the users with SCRAM credentials: every one, or those
// named (a named user without any is a NotFoundError).
func (c *Client) Users(ctx context.Context, names []string) ([]User, error) {
	described, err := c.adm.DescribeUserSCRAMs(ctx, names...)
	if err != nil {
		return nil, c.Explain(ctx, c.codeErr("users", err, nil, kmsg.DescribeUserSCRAMCredentials.Int16()))
	}
	out := []User{}
	for _, d := range described.Sorted() {
		if errors.Is(d.Err, kerr.ResourceNotFound) {
			return nil, &NotFoundError{What: "user", Name: d.User}
		}
		if e := c.codeErr(fmt.Sprintf("user %q", d.User), d.Err, strPtr(d.ErrMessage), kmsg.DescribeUserSCRAMCredentials.Int16()); e != nil {
			return nil, e
		}
		u := User{Name: d.User, Mechanisms: []UserMechanism{}}
		for _, ci := range d.CredInfos {
			u.Mechanisms = append(u.Mechanisms, UserMechanism{Mechanism: ci.Mechanism.String(), Iterations: ci.Iterations})
		}
		out = append(out, u)
	}
	return out, nil
}

// SetPassword creates the user's credential for mechanism, or replaces
// it: the client salts the password (kadm, PBKDF2) and only the salted
// keys travel.
func (c *Client) SetPassword(ctx context.Context, user, mechanism, password string, iterations int32) (UserResult, error) {
	res := UserResult{User: user, Mechanism: mechanism}
	m, err := ParseScramMechanism(mechanism)
	switch {
	case err != nil:
		return res, err
	case user == "":
		return res, errors.New("a user needs a name")
	case password == "":
		return res, fmt.Errorf("user %q: the password is empty", user)
	case iterations < MinScramIterations || iterations > MaxScramIterations:
		return res, fmt.Errorf("iterations %d: want %d to %d", iterations, MinScramIterations, MaxScramIterations)
	}
	res.Mechanism = m.String()
	altered, err := c.adm.AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{{User: user, Mechanism: m, Iterations: iterations, Password: password}})
	return c.userResult(ctx, res, altered, err)
}

// DeleteUsers deletes the users' credentials for mechanism, or for every
// mechanism they have when mechanism is "".
func (c *Client) DeleteUsers(ctx context.Context, names []string, mechanism string) ([]UserResult, error) {
	mechs := map[string][]kadm.ScramMechanism{}
	if mechanism != "" {
		m, err := ParseScramMechanism(mechanism)
		if err != nil {
			return nil, err
		}
		for _, n := range names {
			mechs[n] = []kadm.ScramMechanism{m}
		}
	} else {
		users, err := c.Users(ctx, names)
		if err != nil {
			return nil, err
		}
		for _, u := range users {
			for _, um := range u.Mechanisms {
				m, _ := ParseScramMechanism(um.Mechanism)
				mechs[u.Name] = append(mechs[u.Name], m)
			}
		}
	}
	var out []UserResult
	var errs []error
	for _, n := range names {
		// One request per credential: a request may name a user once.
		for _, m := range mechs[n] {
			altered, err := c.adm.AlterUserSCRAMs(ctx, []kadm.DeleteSCRAM{{User: n, Mechanism: m}}, nil)
			res, err := c.userResult(ctx, UserResult{User: n, Mechanism: m.String()}, altered, err)
			out = append(out, res)
			if err != nil {
				if unreachable(ctx, err) {
					return out, err
				}
				errs = append(errs, err)
			}
		}
	}
	return out, firstOf(errs)
}

// userResult reads the one answer of an AlterUserScramCredentials.
func (c *Client) userResult(ctx context.Context, res UserResult, altered kadm.AlteredUserSCRAMs, err error) (UserResult, error) {
	key := kmsg.AlterUserSCRAMCredentials.Int16()
	if err != nil {
		return res, c.Explain(ctx, c.codeErr("users", err, nil, key))
	}
	a, ok := altered[res.User]
	if !ok {
		return res, fmt.Errorf("user %q: the broker did not answer for it", res.User)
	}
	err = c.codeErr(fmt.Sprintf("user %q", res.User), a.Err, strPtr(a.ErrMessage), key)
	if errors.Is(a.Err, kerr.ResourceNotFound) {
		err = &NotFoundError{What: res.Mechanism + " credential of user", Name: res.User}
	}
	if err != nil {
		res.Error = err.Error()
	}
	return res, err
}

// unreachable reports whether err means no further request can succeed.
func unreachable(ctx context.Context, err error) bool {
	var u *UnreachableError
	return errors.As(err, &u) || ctx.Err() != nil
}
