package principal

import (
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"testing"
)

var (
	oidCN    = asn1.ObjectIdentifier{2, 5, 4, 3}
	oidUID   = asn1.ObjectIdentifier{0, 9, 2342, 19200300, 100, 1, 1}
	oidEmail = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 9, 1}
)

func rawName(t *testing.T, seq pkix.RDNSequence) []byte {
	t.Helper()
	der, err := asn1.Marshal(seq)
	if err != nil {
		t.Fatal(err)
	}
	return der
}

// The expected strings are what Java's X500Principal.getName() prints.
func TestDistinguishedNameJavaForm(t *testing.T) {
	for _, c := range []struct {
		name pkix.Name
		want string
	}{
		{pkix.Name{CommonName: "alice", Organization: []string{"Acme"}, Country: []string{"US"}}, "CN=alice,O=Acme,C=US"},
		{pkix.Name{CommonName: "Duke, Jr.", OrganizationalUnit: []string{"R+D"}}, `CN=Duke\, Jr.,OU=R\+D`},
		{pkix.Name{CommonName: " lead space", Locality: []string{"trail "}}, `CN=\ lead space,L=trail\ `},
		{pkix.Name{CommonName: "#hash=eq;semi<lt>\"q\"\\"}, `CN=\#hash\=eq\;semi\<lt\>\"q\"\\`},
		{pkix.Name{CommonName: "ünï"}, "CN=ünï"},
		{pkix.Name{Province: []string{"MD"}, StreetAddress: []string{"1 Main"}}, "STREET=1 Main,ST=MD"},
		// SERIALNUMBER has no RFC 2253 keyword: OID and hex DER (PrintableString "7").
		{pkix.Name{CommonName: "x", SerialNumber: "7"}, "2.5.4.5=#130137,CN=x"},
		// emailAddress likewise: Go encodes "a@b.c" as UTF8String (0x0c).
		{pkix.Name{CommonName: "x", ExtraNames: []pkix.AttributeTypeAndValue{{Type: oidEmail, Value: "a@b.c"}}}, "1.2.840.113549.1.9.1=#0c056140622e63,CN=x"},
		{pkix.Name{}, ""},
	} {
		got, err := DistinguishedName(rawName(t, c.name.ToRDNSequence()))
		if err != nil || got != c.want {
			t.Errorf("%v: got %q, %v; want %q", c.name, got, err, c.want)
		}
	}
}

func TestDistinguishedNameMultiValuedRDN(t *testing.T) {
	seq := pkix.RDNSequence{
		{{Type: asn1.ObjectIdentifier{2, 5, 4, 10}, Value: "Org"}},
		{{Type: oidCN, Value: "bob"}, {Type: oidUID, Value: "b1"}},
	}
	got, err := DistinguishedName(rawName(t, seq))
	if err != nil || got != "CN=bob+UID=b1,O=Org" {
		t.Fatalf("got %q, %v", got, err)
	}
}

func TestDistinguishedNameUTF8AndBMP(t *testing.T) {
	utf8Val, _ := asn1.MarshalWithParams("żółw", "utf8")
	bmp := asn1.RawValue{Class: asn1.ClassUniversal, Tag: tagBMPString, Bytes: []byte{0, 'h', 0, 'i'}}
	bmpDER, _ := asn1.Marshal(bmp)
	seq := []asn1.RawValue{}
	for _, v := range [][]byte{utf8Val, bmpDER} {
		atv, _ := asn1.Marshal(struct {
			Type  asn1.ObjectIdentifier
			Value asn1.RawValue
		}{oidCN, asn1.RawValue{FullBytes: v}})
		set, _ := asn1.Marshal(asn1.RawValue{Class: asn1.ClassUniversal, Tag: asn1.TagSet, IsCompound: true, Bytes: atv})
		seq = append(seq, asn1.RawValue{FullBytes: set})
	}
	der, err := asn1.Marshal(seq)
	if err != nil {
		t.Fatal(err)
	}
	got, err := DistinguishedName(der)
	if err != nil || got != "CN=hi,CN=żółw" {
		t.Fatalf("got %q, %v", got, err)
	}
}

func TestDistinguishedNameMalformed(t *testing.T) {
	for _, b := range [][]byte{nil, {0x30}, {0x30, 0x02, 0x05, 0x00}, {0x30, 0x00, 0x00}} {
		if _, err := DistinguishedName(b); err == nil {
			t.Errorf("%x: no error", b)
		}
	}
}

func TestBuilderFromTLS(t *testing.T) {
	subject := pkix.Name{CommonName: "svc", OrganizationalUnit: []string{"ServiceUsers"}}
	cert := &x509.Certificate{RawSubject: rawName(t, subject.ToRDNSequence())}
	mapper, err := ParseSSLMappingRules("RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/L,DEFAULT")
	if err != nil {
		t.Fatal(err)
	}
	b := Builder{SSL: mapper}
	p, err := b.FromTLS(&tls.ConnectionState{PeerCertificates: []*x509.Certificate{cert}})
	if err != nil || p.String() != "User:svc" {
		t.Fatalf("got %v, %v", p, err)
	}
	if p, _ := b.FromTLS(&tls.ConnectionState{}); !p.IsAnonymous() {
		t.Fatalf("no certificate: got %v, want ANONYMOUS", p)
	}
	if p, _ := (Builder{}).FromTLS(&tls.ConnectionState{PeerCertificates: []*x509.Certificate{cert}}); p.Name != "CN=svc,OU=ServiceUsers" {
		t.Fatalf("default mapping: got %v", p)
	}
}

func TestParsePrincipal(t *testing.T) {
	p, err := Parse("User:CN=a:b")
	if err != nil || p != (Principal{"User", "CN=a:b"}) {
		t.Fatalf("got %v, %v", p, err)
	}
	if _, err := Parse("alice"); err == nil {
		t.Fatal("no colon: no error")
	}
	if got := (Builder{}).FromSASL("bob").String(); got != "User:bob" {
		t.Fatalf("FromSASL = %s", got)
	}
}
