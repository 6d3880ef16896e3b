package acl

import (
	"net/netip"
	"strconv"
	"strings"
)

// HostAddress prints a client address as Java's InetAddress.getHostAddress
// does, the form ACL hosts are compared with: dotted IPv4 (IPv4-mapped
// IPv6 addresses too, as Java turns them into Inet4Address), and IPv6 as
// eight groups of lower-case hex without zero compression ("::1" is
// "0:0:0:0:0:0:0:1"), with "%zone" when there is one.
func HostAddress(addr netip.Addr) string {
	if addr.Is4() || addr.Is4In6() {
		return addr.Unmap().String()
	}
	if !addr.IsValid() {
		return ""
	}
	b := addr.As16()
	groups := make([]string, 8)
	for i := range groups {
		groups[i] = strconv.FormatUint(uint64(b[2*i])<<8|uint64(b[2*i+1]), 16)
	}
	s := strings.Join(groups, ":")
	if z := addr.Zone(); z != "" {
		s += "%" + z
	}
	return s
}
