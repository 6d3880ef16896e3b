// Package pkcs8 decrypts (and, for the development CA, encrypts) PKCS#8
// EncryptedPrivateKeyInfo, the "ENCRYPTED PRIVATE KEY" PEM blocks that
// KIP-651 PEM keystores use with ssl.key.password, with the standard
// library only: encoding/asn1, crypto/pbkdf2, crypto/aes, crypto/des and
// crypto/cipher. No cipher code of our own.
//
// Supported: PBES2 (RFC 8018) with PBKDF2 and HMAC-SHA1, -SHA224,
// -SHA256, -SHA384 or -SHA512, and AES-128/192/256-CBC or DES-EDE3-CBC:
// what `openssl pkcs8 -topk8 -v2 <cipher> [-v2prf <prf>]` writes (OpenSSL
// 3's default is AES-256-CBC with HMAC-SHA256) and what Java's keytool
// exports. Refused with a message naming the scheme: PBES1 and PKCS#12
// PBE (`-v1`, legacy Java), scrypt (`-scrypt`), and unencrypted keys.
// Legacy OpenSSL-encrypted PEM ("Proc-Type: 4,ENCRYPTED") is not PKCS#8
// and is refused by the caller (tlsconf) with the conversion command.
package pkcs8

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/des"
	"crypto/pbkdf2"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"errors"
	"fmt"
	"hash"
	"io"
)

var (
	oidPBES2  = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 5, 13}
	oidPBKDF2 = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 5, 12}
	oidScrypt = asn1.ObjectIdentifier{1, 3, 6, 1, 4, 1, 11591, 4, 11}
	oidHMAC   = map[string]func() hash.Hash{
		"1.2.840.113549.2.7":  sha1.New,
		"1.2.840.113549.2.8":  sha256.New224,
		"1.2.840.113549.2.9":  sha256.New,
		"1.2.840.113549.2.10": sha512.New384,
		"1.2.840.113549.2.11": sha512.New,
	}
	oidAES256CBC  = asn1.ObjectIdentifier{2, 16, 840, 1, 101, 3, 4, 1, 42}
	oidHMACSHA256 = asn1.ObjectIdentifier{1, 2, 840, 113549, 2, 9}
)

type blockCipher struct {
	keyLen int
	new    func(key []byte) (cipher.Block, error)
}

var ciphers = map[string]blockCipher{
	"2.16.840.1.101.3.4.1.2":  {16, aes.NewCipher},
	"2.16.840.1.101.3.4.1.22": {24, aes.NewCipher},
	"2.16.840.1.101.3.4.1.42": {32, aes.NewCipher},
	"1.2.840.113549.3.7":      {24, des.NewTripleDESCipher},
}

type encryptedPrivateKeyInfo struct {
	Algorithm pkix.AlgorithmIdentifier
	Data      []byte
}

type pbes2Params struct {
	KDF    pkix.AlgorithmIdentifier
	Scheme pkix.AlgorithmIdentifier
}

type pbkdf2Params struct {
	Salt       []byte
	Iterations int
	KeyLength  int                      `asn1:"optional"`
	PRF        pkix.AlgorithmIdentifier `asn1:"optional"`
}

// ErrWrongPassword is returned when the password does not decrypt the key.
var ErrWrongPassword = errors.New("pkcs8: the password does not decrypt the key")

// Decrypt decrypts an EncryptedPrivateKeyInfo (the DER of an ENCRYPTED
// PRIVATE KEY block) and parses the key inside. Errors never hold the
// password.
func Decrypt(der []byte, password []byte) (any, error) {
	var info encryptedPrivateKeyInfo
	if rest, err := asn1.Unmarshal(der, &info); err != nil || len(rest) != 0 {
		return nil, errors.New("pkcs8: not an EncryptedPrivateKeyInfo")
	}
	if !info.Algorithm.Algorithm.Equal(oidPBES2) {
		return nil, fmt.Errorf("pkcs8: encryption scheme %s is not supported: use PBES2 (openssl pkcs8 -topk8 -v2 aes-256-cbc)", info.Algorithm.Algorithm)
	}
	var params pbes2Params
	if _, err := asn1.Unmarshal(info.Algorithm.Parameters.FullBytes, &params); err != nil {
		return nil, errors.New("pkcs8: malformed PBES2 parameters")
	}
	block, iv, err := derive(params, password)
	if err != nil {
		return nil, err
	}
	plain, err := decryptCBC(block, iv, info.Data)
	if err != nil {
		return nil, err
	}
	key, err := x509.ParsePKCS8PrivateKey(plain)
	if err != nil {
		return nil, ErrWrongPassword // a wrong key can leave valid-looking padding
	}
	return key, nil
}

func derive(p pbes2Params, password []byte) (cipher.Block, []byte, error) {
	if p.KDF.Algorithm.Equal(oidScrypt) {
		return nil, nil, errors.New("pkcs8: scrypt key derivation is not supported: use PBKDF2 (openssl pkcs8 -topk8 -v2 aes-256-cbc)")
	}
	if !p.KDF.Algorithm.Equal(oidPBKDF2) {
		return nil, nil, fmt.Errorf("pkcs8: key derivation %s is not supported", p.KDF.Algorithm)
	}
	var kdf pbkdf2Params
	if _, err := asn1.Unmarshal(p.KDF.Parameters.FullBytes, &kdf); err != nil || kdf.Iterations <= 0 {
		return nil, nil, errors.New("pkcs8: malformed PBKDF2 parameters")
	}
	prf := sha1.New // the default PRF is HMAC-SHA1
	if len(kdf.PRF.Algorithm) > 0 {
		var ok bool
		if prf, ok = oidHMAC[kdf.PRF.Algorithm.String()]; !ok {
			return nil, nil, fmt.Errorf("pkcs8: PBKDF2 PRF %s is not supported", kdf.PRF.Algorithm)
		}
	}
	bc, ok := ciphers[p.Scheme.Algorithm.String()]
	if !ok {
		return nil, nil, fmt.Errorf("pkcs8: cipher %s is not supported: use AES-CBC or DES-EDE3-CBC", p.Scheme.Algorithm)
	}
	var iv []byte
	if _, err := asn1.Unmarshal(p.Scheme.Parameters.FullBytes, &iv); err != nil {
		return nil, nil, errors.New("pkcs8: malformed cipher IV")
	}
	key, err := pbkdf2.Key(prf, string(password), kdf.Salt, kdf.Iterations, bc.keyLen)
	if err != nil {
		return nil, nil, fmt.Errorf("pkcs8: PBKDF2: %w", err)
	}
	block, err := bc.new(key)
	if err != nil {
		return nil, nil, err
	}
	if len(iv) != block.BlockSize() {
		return nil, nil, errors.New("pkcs8: the IV does not fit the cipher")
	}
	return block, iv, nil
}

func decryptCBC(block cipher.Block, iv, data []byte) ([]byte, error) {
	bs := block.BlockSize()
	if len(data) == 0 || len(data)%bs != 0 {
		return nil, errors.New("pkcs8: encrypted data is not whole cipher blocks")
	}
	out := make([]byte, len(data))
	cipher.NewCBCDecrypter(block, iv).CryptBlocks(out, data)
	pad := int(out[len(out)-1])
	if pad == 0 || pad > bs || !bytes.Equal(out[len(out)-pad:], bytes.Repeat([]byte{byte(pad)}, pad)) {
		return nil, ErrWrongPassword
	}
	return out[:len(out)-pad], nil
}

// Encrypt wraps a private key as PBES2 with PBKDF2-HMAC-SHA256 and
// AES-256-CBC, what OpenSSL 3 writes by default, for the development CA's
// encrypted keystores.
func Encrypt(key any, password []byte, iterations int, rnd io.Reader) ([]byte, error) {
	plain, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, err
	}
	salt, iv := make([]byte, 16), make([]byte, aes.BlockSize)
	if _, err := io.ReadFull(rnd, salt); err != nil {
		return nil, err
	}
	if _, err := io.ReadFull(rnd, iv); err != nil {
		return nil, err
	}
	dk, err := pbkdf2.Key(sha256.New, string(password), salt, iterations, 32)
	if err != nil {
		return nil, err
	}
	block, _ := aes.NewCipher(dk)
	pad := aes.BlockSize - len(plain)%aes.BlockSize
	plain = append(plain, bytes.Repeat([]byte{byte(pad)}, pad)...)
	cipher.NewCBCEncrypter(block, iv).CryptBlocks(plain, plain)
	return marshalPBES2(salt, iterations, iv, plain)
}

func marshalPBES2(salt []byte, iterations int, iv, data []byte) ([]byte, error) {
	kdfParams, err := asn1.Marshal(pbkdf2Params{Salt: salt, Iterations: iterations, PRF: pkix.AlgorithmIdentifier{Algorithm: oidHMACSHA256, Parameters: asn1.NullRawValue}})
	if err != nil {
		return nil, err
	}
	ivDER, _ := asn1.Marshal(iv)
	params, err := asn1.Marshal(pbes2Params{
		KDF:    pkix.AlgorithmIdentifier{Algorithm: oidPBKDF2, Parameters: asn1.RawValue{FullBytes: kdfParams}},
		Scheme: pkix.AlgorithmIdentifier{Algorithm: oidAES256CBC, Parameters: asn1.RawValue{FullBytes: ivDER}},
	})
	if err != nil {
		return nil, err
	}
	return asn1.Marshal(encryptedPrivateKeyInfo{
		Algorithm: pkix.AlgorithmIdentifier{Algorithm: oidPBES2, Parameters: asn1.RawValue{FullBytes: params}},
		Data:      data,
	})
}
