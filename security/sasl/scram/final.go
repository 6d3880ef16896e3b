package scram

import (
	"crypto/hmac"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"strings"
)

// The client-final-message check of Kafka's ScramSaslServer, with the
// standard library's HMAC (RFC 5802 section 3):
//
//	AuthMessage     = client-first-message-bare "," server-first-message ","
//	                  client-final-message-without-proof
//	ClientSignature = HMAC(StoredKey, AuthMessage)
//	ClientKey       = ClientProof XOR ClientSignature
//	H(ClientKey) must equal StoredKey; the answer is
//	"v=" base64(HMAC(ServerKey, AuthMessage)).
//
// The channel binding must be the gs2 header of the first message, and the
// nonce must end with the server-first-message's (Kafka's endsWith, which
// librdkafka's repeated client nonce needs). Errors say which check failed
// and hold no secret.

var (
	errBinding = errors.New("channel binding differs from the gs2 header")
	errNonce   = errors.New("wrong nonce")
	errProof   = errors.New("wrong password")
)

func (e *exchange) verifyFinal(msg string) (string, error) {
	withoutProof, proofB64, _ := strings.Cut(msg, ",p=")
	if attribute(withoutProof, 'c') != base64.StdEncoding.EncodeToString([]byte(e.gs2Header)) {
		return "", errBinding
	}
	if nonce := attribute(withoutProof, 'r'); e.nonce == "" || !strings.HasSuffix(nonce, e.nonce) {
		return "", errNonce
	}
	proof, err := base64.StdEncoding.DecodeString(proofB64)
	if err != nil {
		return "", errProof
	}
	authMessage := e.clientFirst + "," + e.serverFirst + "," + withoutProof
	signature := mac(e.srv.mech, e.cred.StoredKey, authMessage)
	if len(proof) != len(signature) {
		return "", errProof
	}
	clientKey := make([]byte, len(proof))
	subtle.XORBytes(clientKey, proof, signature)
	h := e.srv.mech.hash()()
	h.Write(clientKey)
	if !hmac.Equal(h.Sum(nil), e.cred.StoredKey) {
		return "", errProof
	}
	return "v=" + base64.StdEncoding.EncodeToString(mac(e.srv.mech, e.cred.ServerKey, authMessage)), nil
}

// splitGS2 splits a client-first-message into its gs2 header (up to and
// including the second comma) and the bare message.
func splitGS2(msg string) (header, bare string) {
	first := strings.IndexByte(msg, ',')
	if first < 0 {
		return "", msg
	}
	second := strings.IndexByte(msg[first+1:], ',')
	if second < 0 {
		return "", msg
	}
	cut := first + 1 + second + 1
	return msg[:cut], msg[cut:]
}

// attribute is the value of "x=" in a comma-separated SCRAM message.
func attribute(msg string, name byte) string {
	for part := range strings.SplitSeq(msg, ",") {
		if len(part) >= 2 && part[0] == name && part[1] == '=' {
			return part[2:]
		}
	}
	return ""
}
