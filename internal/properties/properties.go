// Package properties reads Java .properties files (Kafka's server.properties
// and meta.properties) as java.util.Properties.load does: # and ! comments,
// key and value separated by '=', ':' or white space, a trailing backslash
// continues the line, and the escapes \t \n \r \f \uXXXX and \<char>. Keys
// stay flat: "log.dirs=/x" is the key log.dirs. A repeated key keeps its
// last value. It imports nothing of kbroker's, so that config and storage
// share one reader.
package properties

import (
	"fmt"
	"strconv"
	"strings"
)

// Parse decodes a .properties file. The only error is a malformed \uXXXX
// escape, reported with its line number.
func Parse(b []byte) (map[string]string, error) {
	out := map[string]string{}
	lines := strings.Split(strings.ReplaceAll(strings.ReplaceAll(string(b), "\r\n", "\n"), "\r", "\n"), "\n")
	for i := 0; i < len(lines); i++ {
		start := i + 1
		line := trimLeftSpace(lines[i])
		if line == "" || line[0] == '#' || line[0] == '!' {
			continue
		}
		for endsWithContinuation(line) && i+1 < len(lines) {
			i++
			line = line[:len(line)-1] + trimLeftSpace(lines[i])
		}
		line = strings.TrimSuffix(line, "\\") // continuation on the last line
		key, value := splitProperty(line)
		k, err := unescapeProperty(key)
		if err != nil {
			return nil, fmt.Errorf("line %d: %v", start, err)
		}
		v, err := unescapeProperty(value)
		if err != nil {
			return nil, fmt.Errorf("line %d: %v", start, err)
		}
		out[k] = v
	}
	return out, nil
}

func trimLeftSpace(s string) string { return strings.TrimLeft(s, " \t\f") }

// endsWithContinuation reports whether line ends in an odd number of
// backslashes.
func endsWithContinuation(line string) bool {
	n := 0
	for i := len(line) - 1; i >= 0 && line[i] == '\\'; i-- {
		n++
	}
	return n%2 == 1
}

// splitProperty splits a logical line at the first unescaped '=', ':' or
// white space; white space around the separator is dropped.
func splitProperty(line string) (key, value string) {
	end := len(line)
	for i := 0; i < len(line); i++ {
		if line[i] == '\\' {
			i++
			continue
		}
		if strings.IndexByte("=: \t\f", line[i]) >= 0 {
			end = i
			break
		}
	}
	key, rest := line[:end], trimLeftSpace(line[end:])
	if rest != "" && (rest[0] == '=' || rest[0] == ':') {
		rest = trimLeftSpace(rest[1:])
	}
	return key, rest
}

func unescapeProperty(s string) (string, error) {
	if !strings.Contains(s, "\\") {
		return s, nil
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' || i+1 == len(s) {
			b.WriteByte(c)
			continue
		}
		i++
		switch s[i] {
		case 't':
			b.WriteByte('\t')
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 'f':
			b.WriteByte('\f')
		case 'u':
			if i+5 > len(s) {
				return "", fmt.Errorf("malformed \\uxxxx escape in %q", s)
			}
			r, err := strconv.ParseUint(s[i+1:i+5], 16, 16)
			if err != nil {
				return "", fmt.Errorf("malformed \\uxxxx escape in %q", s)
			}
			b.WriteRune(rune(r))
			i += 4
		default:
			b.WriteByte(s[i])
		}
	}
	return b.String(), nil
}
