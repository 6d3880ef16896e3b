package quota

import "net"

// validIP is isValidIpEntity: Kafka accepts an IP or a host name
// InetAddress.getByName resolves. kbroker accepts IP literals only: a
// broker resolving names sent by clients would block the controller on DNS,
// and connections are matched by address anyway.
func validIP(s string) bool { return net.ParseIP(s) != nil }

// NormalizeIP is the form IP entities are matched in: the address as Go
// prints it, so that 127.0.0.1 and ::ffff:127.0.0.1 are one entity.
func NormalizeIP(s string) string {
	if ip := net.ParseIP(s); ip != nil {
		return ip.String()
	}
	return s
}
