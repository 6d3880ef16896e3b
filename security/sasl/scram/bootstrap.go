package scram

import (
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// Bootstrap is one credential given on the command line, as Kafka's
// `kafka-storage format --add-scram` takes it, for the first admin user.
type Bootstrap struct {
	User       string
	Mechanism  Mechanism
	Credential Credential
}

// ParseAddScram parses Kafka's --add-scram syntax:
//
//	SCRAM-SHA-256=[name=alice,password=alice-secret]
//	SCRAM-SHA-512=[name=alice,iterations=8192,salt="N3E=",saltedpassword="YCE="]
//
// Keys: name (required), password or saltedpassword (with salt, base64),
// salt (base64; random from rnd when absent), iterations (default 4096).
// Values may be double-quoted, which lets them hold commas. Errors never
// quote a password.
func ParseAddScram(s string, rnd io.Reader) (Bootstrap, error) {
	mechName, body, ok := strings.Cut(s, "=")
	if !ok || !strings.HasPrefix(body, "[") || !strings.HasSuffix(body, "]") {
		return Bootstrap{}, errors.New("scram: --add-scram takes MECHANISM=[name=...,password=...]")
	}
	m, ok := MechanismFromName(strings.TrimSpace(mechName))
	if !ok {
		return Bootstrap{}, fmt.Errorf("scram: unknown SCRAM mechanism %q", mechName)
	}
	kv, err := splitKeyValues(body[1 : len(body)-1])
	if err != nil {
		return Bootstrap{}, err
	}
	return bootstrapFrom(m, kv, rnd)
}

func bootstrapFrom(m Mechanism, kv map[string]string, rnd io.Reader) (Bootstrap, error) {
	b := Bootstrap{User: kv["name"], Mechanism: m}
	if b.User == "" {
		return Bootstrap{}, errors.New("scram: --add-scram needs name=")
	}
	iterations := MinIterations
	if s, ok := kv["iterations"]; ok {
		n, err := strconv.Atoi(s)
		if err != nil || n < MinIterations || n > MaxIterations {
			return Bootstrap{}, fmt.Errorf("scram: iterations %q must be an integer in [%d, %d]", s, MinIterations, MaxIterations)
		}
		iterations = n
	}
	salt, err := bootstrapSalt(kv, rnd)
	if err != nil {
		return Bootstrap{}, err
	}
	password, hasPassword := kv["password"]
	saltedB64, hasSalted := kv["saltedpassword"]
	switch {
	case hasPassword == hasSalted:
		return Bootstrap{}, errors.New("scram: --add-scram needs exactly one of password= and saltedpassword=")
	case hasSalted:
		if _, ok := kv["salt"]; !ok {
			return Bootstrap{}, errors.New("scram: saltedpassword= needs salt=")
		}
		salted, err := base64.StdEncoding.DecodeString(saltedB64)
		if err != nil {
			return Bootstrap{}, errors.New("scram: saltedpassword is not base64")
		}
		b.Credential = FromSaltedPassword(m, salt, salted, iterations)
	default:
		if b.Credential, err = NewCredential(m, password, salt, iterations); err != nil {
			return Bootstrap{}, err
		}
	}
	return b, nil
}

func bootstrapSalt(kv map[string]string, rnd io.Reader) ([]byte, error) {
	s, ok := kv["salt"]
	if !ok {
		return NewSalt(rnd)
	}
	salt, err := base64.StdEncoding.DecodeString(s)
	if err != nil || len(salt) == 0 {
		return nil, errors.New("scram: salt is not base64")
	}
	return salt, nil
}

// splitKeyValues splits key=value,key="value, with commas".
func splitKeyValues(s string) (map[string]string, error) {
	out := map[string]string{}
	for len(s) > 0 {
		key, rest, ok := strings.Cut(s, "=")
		if !ok {
			return nil, fmt.Errorf("scram: %q has no '='", strings.TrimSpace(key))
		}
		key = strings.ToLower(strings.TrimSpace(key))
		var val string
		if strings.HasPrefix(rest, `"`) {
			end := strings.Index(rest[1:], `"`)
			if end < 0 {
				return nil, fmt.Errorf("scram: the value of %s has no closing quote", key)
			}
			val, rest = rest[1:1+end], rest[2+end:]
			if rest != "" && !strings.HasPrefix(rest, ",") {
				return nil, fmt.Errorf("scram: text after the quoted value of %s", key)
			}
		} else {
			val, rest, _ = strings.Cut(rest, ",")
			rest = "," + rest
		}
		if _, dup := out[key]; dup {
			return nil, fmt.Errorf("scram: %s given twice", key)
		}
		out[key] = val
		s = strings.TrimPrefix(rest, ",")
	}
	return out, nil
}
