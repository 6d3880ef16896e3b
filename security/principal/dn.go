package principal

import (
	"encoding/asn1"
	"encoding/hex"
	"fmt"
	"strings"
	"unicode/utf16"
)

// rfc2253Keywords are the attribute types Java's X500Principal prints by
// name in RFC 2253 form (AVAKeyword entries marked RFC 2253 compliant);
// every other type is printed as its dotted OID with a #hex DER value.
var rfc2253Keywords = map[string]string{
	"2.5.4.3":                    "CN",
	"2.5.4.6":                    "C",
	"2.5.4.7":                    "L",
	"2.5.4.8":                    "ST",
	"2.5.4.9":                    "STREET",
	"2.5.4.10":                   "O",
	"2.5.4.11":                   "OU",
	"0.9.2342.19200300.100.1.25": "DC",
	"0.9.2342.19200300.100.1.1":  "UID",
}

// ASN.1 string tags Java prints as text (AVA.isDerString, non-canonical).
const (
	tagUTF8String      = 12
	tagPrintableString = 19
	tagT61String       = 20
	tagIA5String       = 22
	tagGeneralString   = 27
	tagBMPString       = 30
)

type attribute struct {
	Type  asn1.ObjectIdentifier
	Value asn1.RawValue
}

// DistinguishedName renders a DER-encoded X.509 Name (a certificate's
// RawSubject) in RFC 2253 form as Java's X500Principal.getName() does:
// the most specific RDN first, RDNs joined by ",", the attributes of a
// multi-valued RDN joined by "+" in encoded order.
func DistinguishedName(rawName []byte) (string, error) {
	var rdns []asn1.RawValue
	rest, err := asn1.Unmarshal(rawName, &rdns)
	if err != nil || len(rest) != 0 {
		return "", fmt.Errorf("principal: malformed certificate subject")
	}
	parts := make([]string, 0, len(rdns))
	for i := len(rdns) - 1; i >= 0; i-- {
		rdn, err := formatRDN(rdns[i])
		if err != nil {
			return "", err
		}
		parts = append(parts, rdn)
	}
	return strings.Join(parts, ","), nil
}

func formatRDN(set asn1.RawValue) (string, error) {
	if set.Class != asn1.ClassUniversal || set.Tag != asn1.TagSet {
		return "", fmt.Errorf("principal: malformed certificate subject: an RDN is not a SET")
	}
	var avas []string
	for rest := set.Bytes; len(rest) > 0; {
		var a attribute
		var err error
		if rest, err = asn1.Unmarshal(rest, &a); err != nil {
			return "", fmt.Errorf("principal: malformed certificate subject attribute")
		}
		avas = append(avas, formatAttribute(a))
	}
	return strings.Join(avas, "+"), nil
}

func formatAttribute(a attribute) string {
	oid := a.Type.String()
	keyword, known := rfc2253Keywords[oid]
	text, isText := attributeText(a.Value)
	if !known || !isText {
		name := keyword
		if !known {
			name = oid
		}
		return name + "=#" + hex.EncodeToString(a.Value.FullBytes)
	}
	return keyword + "=" + escapeValue(text)
}

// attributeText decodes the string types Java prints as text. Java reads
// every one of them as UTF-8 bytes except that we decode BMPString as
// UTF-16 (see the package doc).
func attributeText(v asn1.RawValue) (string, bool) {
	if v.Class != asn1.ClassUniversal {
		return "", false
	}
	switch v.Tag {
	case tagUTF8String, tagPrintableString, tagT61String, tagIA5String, tagGeneralString:
		return strings.ToValidUTF8(string(v.Bytes), "\uFFFD"), true
	case tagBMPString:
		if len(v.Bytes)%2 != 0 {
			return "", false
		}
		u := make([]uint16, len(v.Bytes)/2)
		for i := range u {
			u[i] = uint16(v.Bytes[2*i])<<8 | uint16(v.Bytes[2*i+1])
		}
		return string(utf16.Decode(u)), true
	}
	return "", false
}

// escapeValue applies Java's AVA.toRFC2253String escaping: a backslash
// before each of ,=+<>#;"\ anywhere, \00 for NUL, and a backslash before
// leading and trailing spaces and carriage returns.
func escapeValue(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case strings.ContainsRune(",=+<>#;\"\\", r):
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == 0:
			b.WriteString(`\00`)
		default:
			b.WriteRune(r)
		}
	}
	escaped := b.String()
	lead := len(escaped) - len(strings.TrimLeft(escaped, " \r"))
	trail := len(strings.TrimRight(escaped, " \r"))
	if lead == 0 && trail == len(escaped) {
		return escaped
	}
	var out strings.Builder
	for i := 0; i < len(escaped); i++ {
		if i < lead || i >= trail {
			out.WriteByte('\\')
		}
		out.WriteByte(escaped[i])
	}
	return out.String()
}
