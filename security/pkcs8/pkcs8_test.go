package pkcs8

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/pem"
	"errors"
	"os"
	"strings"
	"testing"
)

func readPEM(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	block, _ := pem.Decode(b)
	return block.Bytes
}

// The testdata keys were written by OpenSSL 3.0 (see the file names for
// the options: openssl pkcs8 -topk8 -v2 <cipher> -v2prf <prf>).
func TestDecryptOpenSSLKeys(t *testing.T) {
	for _, name := range []string{"ec-aes256-sha256.pem", "rsa-aes128-sha1.pem", "ec-des3-sha512.pem"} {
		key, err := Decrypt(readPEM(t, name), []byte("k3y-pass"))
		if err != nil || key == nil {
			t.Errorf("%s: %v", name, err)
		}
		if _, err := Decrypt(readPEM(t, name), []byte("wrong")); !errors.Is(err, ErrWrongPassword) {
			t.Errorf("%s with a wrong password: %v", name, err)
		}
	}
}

func TestUnsupportedSchemes(t *testing.T) {
	for name, want := range map[string]string{
		"ec-pbes1.pem":  "is not supported: use PBES2",
		"ec-scrypt.pem": "scrypt key derivation is not supported",
	} {
		_, err := Decrypt(readPEM(t, name), []byte("k3y-pass"))
		if err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "k3y-pass") {
			t.Errorf("%s: %v", name, err)
		}
	}
	if _, err := Decrypt([]byte{0x30, 0}, nil); err == nil {
		t.Error("garbage accepted")
	}
}

func TestEncryptRoundTrip(t *testing.T) {
	k, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	der, err := Encrypt(k, []byte("pw"), 10000, rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	got, err := Decrypt(der, []byte("pw"))
	if err != nil || !got.(*ecdsa.PrivateKey).Equal(k) {
		t.Fatalf("%v", err)
	}
}

func FuzzDecrypt(f *testing.F) {
	for _, n := range []string{"ec-aes256-sha256.pem", "rsa-aes128-sha1.pem", "ec-pbes1.pem"} {
		b, _ := os.ReadFile("testdata/" + n)
		block, _ := pem.Decode(b)
		f.Add(block.Bytes)
	}
	f.Fuzz(func(t *testing.T, der []byte) {
		Decrypt(der, []byte("k3y-pass"))
	})
}
