package scram

import (
	"sort"
	"sync"
)

// Store looks up credentials. The broker's implementation reads the
// metadata image; MemStore serves tests and bootstrap.
type Store interface {
	Credential(m Mechanism, user string) (Credential, bool)
}

// Info is what DescribeUserScramCredentials tells about one credential.
type Info struct {
	Mechanism  Mechanism
	Iterations int
}

// MemStore is a Store in memory, safe for concurrent use.
type MemStore struct {
	mu    sync.RWMutex // guards creds
	creds map[string]map[Mechanism]Credential
}

// NewMemStore returns an empty store.
func NewMemStore() *MemStore { return &MemStore{creds: map[string]map[Mechanism]Credential{}} }

// Set stores or replaces a credential.
func (s *MemStore) Set(user string, m Mechanism, c Credential) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.creds[user] == nil {
		s.creds[user] = map[Mechanism]Credential{}
	}
	s.creds[user][m] = c
}

// Delete removes a credential, reporting whether it existed.
func (s *MemStore) Delete(user string, m Mechanism) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.creds[user][m]; !ok {
		return false
	}
	delete(s.creds[user], m)
	if len(s.creds[user]) == 0 {
		delete(s.creds, user)
	}
	return true
}

// Credential implements Store.
func (s *MemStore) Credential(m Mechanism, user string) (Credential, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	c, ok := s.creds[user][m]
	return c, ok
}

// Has reports whether the user has a credential for m.
func (s *MemStore) Has(user string, m Mechanism) bool {
	_, ok := s.Credential(m, user)
	return ok
}

// Describe lists a user's credentials by mechanism (nil if none).
func (s *MemStore) Describe(user string) []Info {
	s.mu.RLock()
	defer s.mu.RUnlock()
	var out []Info
	for m, c := range s.creds[user] {
		out = append(out, Info{Mechanism: m, Iterations: c.Iterations})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Mechanism < out[j].Mechanism })
	return out
}

// Users lists the users with credentials, sorted.
func (s *MemStore) Users() []string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make([]string, 0, len(s.creds))
	for u := range s.creds {
		out = append(out, u)
	}
	sort.Strings(out)
	return out
}
