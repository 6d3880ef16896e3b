package acl

import (
	"cmp"
	"slices"
	"strings"
)

// Set is an immutable, indexed set of ACLs: the authorizer's snapshot of
// the ACLs in the metadata log. Changes build a new Set (copy on write), so
// readers never lock; a Set is safe for concurrent use.
//
// The index follows Kafka's StandardAuthorizer: by resource type, then
// LITERAL names in a map (the LITERAL "*" is a name like any other) and
// PREFIXED names in a map probed once per distinct prefix length, so an
// authorization costs a few map lookups whatever the number of ACLs.
type Set struct {
	sections map[ResourceType]*section
	all      []Binding // sorted, for Describe and snapshots
}

type section struct {
	literal    map[string][]Binding
	prefixed   map[string][]Binding
	prefixLens []int // distinct lengths of the PREFIXED names, longest first
}

// NewSet indexes bindings, dropping duplicates (Kafka keeps one copy of
// identical ACLs). Bindings must be valid (Binding.Validate).
func NewSet(bindings []Binding) *Set {
	all := slices.Clone(bindings)
	slices.SortFunc(all, compareBindings)
	all = slices.Compact(all)
	s := &Set{sections: map[ResourceType]*section{}, all: all}
	for _, b := range all {
		s.sectionFor(b.Type).add(b)
	}
	for _, sec := range s.sections {
		slices.SortFunc(sec.prefixLens, func(a, b int) int { return cmp.Compare(b, a) })
	}
	return s
}

func (s *Set) sectionFor(t ResourceType) *section {
	sec := s.sections[t]
	if sec == nil {
		sec = &section{literal: map[string][]Binding{}, prefixed: map[string][]Binding{}}
		s.sections[t] = sec
	}
	return sec
}

func (sec *section) add(b Binding) {
	if b.Pattern.Pattern == PatternLiteral {
		sec.literal[b.Name] = append(sec.literal[b.Name], b)
		return
	}
	if len(sec.prefixed[b.Name]) == 0 && !slices.Contains(sec.prefixLens, len(b.Name)) {
		sec.prefixLens = append(sec.prefixLens, len(b.Name))
	}
	sec.prefixed[b.Name] = append(sec.prefixed[b.Name], b)
}

// Len is the number of ACLs.
func (s *Set) Len() int { return len(s.all) }

// Bindings returns every ACL, sorted. The caller must not modify it.
func (s *Set) Bindings() []Binding { return s.all }

// Select returns the ACLs f matches, sorted.
func (s *Set) Select(f Filter) []Binding {
	var out []Binding
	for _, b := range s.all {
		if f.Matches(b) {
			out = append(out, b)
		}
	}
	return out
}

// With returns a set that also holds bindings.
func (s *Set) With(bindings ...Binding) *Set {
	return NewSet(append(slices.Clone(s.all), bindings...))
}

// Without returns a set without the bindings f matches, and those bindings.
func (s *Set) Without(f Filter) (*Set, []Binding) {
	var keep, removed []Binding
	for _, b := range s.all {
		if f.Matches(b) {
			removed = append(removed, b)
		} else {
			keep = append(keep, b)
		}
	}
	return NewSet(keep), removed
}

// visit calls fn with every ACL that applies to the LITERAL resource
// (typ, name), in Kafka's order: the exact LITERAL name and the PREFIXED
// names, longest first, then the LITERAL wildcard. fn returns false to stop.
func (s *Set) visit(typ ResourceType, name string, fn func(Binding) bool) {
	sec := s.sections[typ]
	if sec == nil {
		return
	}
	each := func(bs []Binding) bool {
		for _, b := range bs {
			if !fn(b) {
				return false
			}
		}
		return true
	}
	if !each(sec.literal[name]) {
		return
	}
	for _, n := range sec.prefixLens {
		if n <= len(name) && !each(sec.prefixed[name[:n]]) {
			return
		}
	}
	if name != Wildcard {
		each(sec.literal[Wildcard])
	}
}

func compareBindings(a, b Binding) int {
	return cmp.Or(
		cmp.Compare(a.Type, b.Type),
		strings.Compare(a.Name, b.Name),
		cmp.Compare(a.Pattern.Pattern, b.Pattern.Pattern),
		strings.Compare(a.Principal, b.Principal),
		strings.Compare(a.Host, b.Host),
		cmp.Compare(a.Operation, b.Operation),
		cmp.Compare(a.Permission, b.Permission),
	)
}
