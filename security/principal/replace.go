package principal

import (
	"errors"
	"regexp"
	"strconv"
	"strings"
)

// escapeMissingGroups is Kafka's escapeLiteralBackReferences (taken there
// from Apache NiFi): a $N naming a group the pattern does not have is kept
// as literal text, after dropping trailing digits while the number is too
// large ($12 with one group is group 1 followed by "2").
func escapeMissingGroups(replacement string, groups int) string {
	if groups == 0 {
		return replacement
	}
	refs := regexp.MustCompile(`\$(\d+)`).FindAllStringSubmatchIndex(replacement, -1)
	var b strings.Builder
	last := 0
	for _, ref := range refs {
		digits := replacement[ref[2]:ref[3]]
		if strings.HasPrefix(digits, "0") {
			continue
		}
		n, err := strconv.Atoi(digits)
		if err != nil {
			n = groups + 1 // too long for an int: certainly missing
		}
		for n > groups && n >= 10 {
			n /= 10
		}
		if n > groups {
			b.WriteString(replacement[last:ref[0]])
			b.WriteByte('\\')
			last = ref[0]
		}
	}
	b.WriteString(replacement[last:])
	return b.String()
}

// javaReplaceAll is java.lang.String.replaceAll(pattern, replacement):
// Java's replacement syntax ($n, ${name}, \x) over Go's matches.
func javaReplaceAll(re *regexp.Regexp, input, replacement string) (string, error) {
	var b strings.Builder
	last := 0
	for _, m := range re.FindAllStringSubmatchIndex(input, -1) {
		b.WriteString(input[last:m[0]])
		if err := appendReplacement(&b, re, input, m, replacement); err != nil {
			return "", err
		}
		last = m[1]
	}
	b.WriteString(input[last:])
	return b.String(), nil
}

func appendReplacement(b *strings.Builder, re *regexp.Regexp, input string, m []int, repl string) error {
	for i := 0; i < len(repl); {
		switch c := repl[i]; c {
		case '\\':
			if i+1 == len(repl) {
				return errors.New("character to be escaped is missing")
			}
			b.WriteByte(repl[i+1])
			i += 2
		case '$':
			ref, next, err := groupReference(re, repl, i+1)
			if err != nil {
				return err
			}
			if m[2*ref] >= 0 {
				b.WriteString(input[m[2*ref]:m[2*ref+1]])
			}
			i = next
		default:
			b.WriteByte(c)
			i++
		}
	}
	return nil
}

// groupReference reads the group named after a '$' at repl[i:], returning
// the group number and the index after the reference.
func groupReference(re *regexp.Regexp, repl string, i int) (int, int, error) {
	if i == len(repl) {
		return 0, 0, errors.New("illegal group reference: group index is missing")
	}
	if repl[i] == '{' {
		return namedGroupReference(re, repl, i+1)
	}
	if repl[i] < '0' || repl[i] > '9' {
		return 0, 0, errors.New("illegal group reference")
	}
	ref := int(repl[i] - '0')
	i++
	for i < len(repl) && repl[i] >= '0' && repl[i] <= '9' {
		next := ref*10 + int(repl[i]-'0')
		if next > re.NumSubexp() {
			break
		}
		ref, i = next, i+1
	}
	if ref > re.NumSubexp() {
		return 0, 0, errors.New("no group " + strconv.Itoa(ref))
	}
	return ref, i, nil
}

func namedGroupReference(re *regexp.Regexp, repl string, i int) (int, int, error) {
	start := i
	for i < len(repl) && isASCIIAlnum(repl[i]) {
		i++
	}
	name := repl[start:i]
	switch {
	case name == "":
		return 0, 0, errors.New("named capturing group has 0 length name")
	case i == len(repl) || repl[i] != '}':
		return 0, 0, errors.New("named capturing group is missing trailing '}'")
	case name[0] >= '0' && name[0] <= '9':
		return 0, 0, errors.New("capturing group name {" + name + "} starts with digit character")
	}
	ref := re.SubexpIndex(name)
	if ref < 0 {
		return 0, 0, errors.New("no group with name {" + name + "}")
	}
	return ref, i + 1, nil
}

func isASCIIAlnum(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}
