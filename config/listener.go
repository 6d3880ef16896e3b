package config

import (
	"fmt"
	"net"
	"sort"
	"strconv"
	"strings"
)

// Listener is one entry of listeners or advertised.listeners:
// NAME://host:port. Name is upper case (Kafka normalises listener names);
// an empty Host means all interfaces.
type Listener struct {
	Name string
	Host string
	Port int32
}

// Address is host:port, as net.Listen takes it (IPv6 in brackets).
func (l Listener) Address() string { return joinHostPort(l.Host, l.Port) }

// String is the Kafka form, NAME://host:port.
func (l Listener) String() string { return l.Name + "://" + l.Address() }

// wildcard reports whether the host binds all interfaces, so cannot be
// advertised.
func (l Listener) wildcard() bool { return l.Host == "" || isWildcardHost(l.Host) }

func isWildcardHost(h string) bool { return h == "0.0.0.0" || h == "::" }

// ParseListeners parses Kafka's listeners syntax: a comma-separated list of
// NAME://host:port, where host may be empty (all interfaces) or an IPv6
// address in brackets ([::1]:9092).
func ParseListeners(s string) ([]Listener, error) {
	var out []Listener
	for _, item := range splitList(s) {
		name, addr, ok := strings.Cut(item, "://")
		if !ok || name == "" {
			return nil, fmt.Errorf("%q is not NAME://host:port", item)
		}
		host, port, err := splitHostPort(addr)
		if err != nil {
			return nil, fmt.Errorf("%q: %v", item, err)
		}
		out = append(out, Listener{Name: strings.ToUpper(name), Host: host, Port: port})
	}
	return out, nil
}

// Voter is one entry of controller.quorum.voters: ID@host:port.
type Voter struct {
	ID   int32
	Host string
	Port int32
}

// Address is host:port (IPv6 in brackets).
func (v Voter) Address() string { return joinHostPort(v.Host, v.Port) }

// String is the Kafka form, ID@host:port.
func (v Voter) String() string { return strconv.Itoa(int(v.ID)) + "@" + v.Address() }

// ParseVoters parses controller.quorum.voters: a comma-separated list of
// ID@host:port.
func ParseVoters(s string) ([]Voter, error) {
	var out []Voter
	for _, item := range splitList(s) {
		id, addr, ok := strings.Cut(item, "@")
		if !ok {
			return nil, fmt.Errorf("%q is not ID@host:port", item)
		}
		n, err := strconv.ParseInt(id, 10, 32)
		if err != nil || n < 0 {
			return nil, fmt.Errorf("%q: the id must be an integer >= 0", item)
		}
		host, port, err := splitHostPort(addr)
		if err != nil {
			return nil, fmt.Errorf("%q: %v", item, err)
		}
		if host == "" {
			return nil, fmt.Errorf("%q: the host is empty", item)
		}
		out = append(out, Voter{ID: int32(n), Host: host, Port: port})
	}
	return out, nil
}

// parseHostPorts parses a comma-separated list of host:port with non-empty
// hosts (controller.quorum.bootstrap.servers).
func parseHostPorts(s string) ([]string, error) {
	var out []string
	for _, item := range splitList(s) {
		host, _, err := splitHostPort(item)
		if err != nil {
			return nil, fmt.Errorf("%q: %v", item, err)
		}
		if host == "" {
			return nil, fmt.Errorf("%q: the host is empty", item)
		}
		out = append(out, item)
	}
	return out, nil
}

// splitHostPort splits host:port and checks the port is in [0, 65535].
func splitHostPort(addr string) (string, int32, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", 0, fmt.Errorf("not host:port (an IPv6 host goes in brackets: [::1]:9092)")
	}
	n, err := strconv.ParseInt(port, 10, 32)
	if err != nil || n < 0 || n > 65535 {
		return "", 0, fmt.Errorf("port %q is not in [0, 65535]", port)
	}
	return host, int32(n), nil
}

func joinHostPort(host string, port int32) string {
	return net.JoinHostPort(host, strconv.Itoa(int(port)))
}

// parseProtocolMap parses listener.security.protocol.map:
// NAME:PROTOCOL,... with names and protocols in upper case.
func parseProtocolMap(s string) (map[string]string, error) {
	out := map[string]string{}
	for _, item := range splitList(s) {
		name, proto, ok := strings.Cut(item, ":")
		name, proto = strings.TrimSpace(name), strings.TrimSpace(proto)
		if !ok || name == "" || proto == "" {
			return nil, fmt.Errorf("%q is not NAME:PROTOCOL", item)
		}
		out[strings.ToUpper(name)] = strings.ToUpper(proto)
	}
	return out, nil
}

// formatProtocolMap is the Kafka form of a protocol map, sorted by name.
func formatProtocolMap(m map[string]string) string {
	names := make([]string, 0, len(m))
	for n := range m {
		names = append(names, n)
	}
	sort.Strings(names)
	for i, n := range names {
		names[i] = n + ":" + m[n]
	}
	return strings.Join(names, ",")
}

// splitList splits Kafka's comma-separated lists, trimming spaces and
// dropping empty items.
func splitList(s string) []string {
	var out []string
	for item := range strings.SplitSeq(s, ",") {
		if item = strings.TrimSpace(item); item != "" {
			out = append(out, item)
		}
	}
	return out
}
