package controller

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/protocol"
	"github.com/kbroker/kbroker/security/principal"
)

// Envelope (58), v0 (KIP-590): a broker forwards a client's request to the
// active controller wrapped with the client's principal (Kafka's
// DefaultPrincipalData) and address. RequestData is the request as the
// client framed it, header included; ResponseData the answer, response
// header included. Only brokers may send envelopes (CLUSTER_ACTION, checked
// on the connection like every controller API).

const envelopeVersion = 0

// wrapEnvelope frames req for caller in an Envelope.
func wrapEnvelope(req kmsg.Request, c Caller) *kmsg.EnvelopeRequest {
	env := kmsg.NewPtrEnvelopeRequest()
	env.SetVersion(envelopeVersion)
	var data []byte
	data = kbin.AppendInt16(data, req.Key())
	data = kbin.AppendInt16(data, req.GetVersion())
	data = kbin.AppendInt32(data, 0) // correlation id: one request per envelope
	data = kbin.AppendNullableString(data, &c.ClientID)
	if req.IsFlexible() {
		data = append(data, 0)
	}
	env.RequestData = req.AppendTo(data)
	pd := kmsg.NewDefaultPrincipalData()
	pd.Type, pd.Name = c.Principal.Type, c.Principal.Name
	env.RequestPrincipal = pd.AppendTo(nil)
	return env
}

// unwrapEnvelopeResponse decodes the answer an envelope carried back to
// req.
func unwrapEnvelopeResponse(req kmsg.Request, resp *kmsg.EnvelopeResponse) (kmsg.Response, error) {
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		return nil, fmt.Errorf("controller: envelope refused: %w", err)
	}
	out := req.ResponseKind()
	rd := kbin.Reader{Src: resp.ResponseData}
	rd.Int32() // correlation id
	if out.IsFlexible() {
		for n := rd.Uvarint(); n > 0 && rd.Ok(); n-- {
			rd.Uvarint()
			rd.Span(int(rd.Uvarint()))
		}
	}
	if !rd.Ok() {
		return nil, errors.New("controller: envelope response header is malformed")
	}
	if err := out.ReadFrom(rd.Src); err != nil {
		return nil, fmt.Errorf("controller: decoding enveloped %s response: %w", kmsg.NameForKey(req.Key()), err)
	}
	return out, nil
}

// handleEnvelope serves an enveloped request for the client it names: a
// request this node cannot decode is INVALID_REQUEST, a principal it
// cannot read PRINCIPAL_DESERIALIZATION_FAILURE, in the envelope's own
// error code (Kafka's ControllerApis.handleEnvelopeRequest).
func (n *Node) handleEnvelope(ctx context.Context, env *kmsg.EnvelopeRequest) *kmsg.EnvelopeResponse {
	resp := env.ResponseKind().(*kmsg.EnvelopeResponse)
	inner, caller, err := parseEnvelope(env)
	if err != nil {
		n.log.Warn("refused an envelope", "err", err)
		resp.ErrorCode = errorCodeOf(err)
		return resp
	}
	out, err := n.Handle(WithCaller(ctx, caller), inner.Body)
	if err != nil {
		n.log.Warn("refused an enveloped request", "api", kmsg.NameForKey(inner.Key), "err", err)
		resp.ErrorCode = kerr.InvalidRequest.Code
		return resp
	}
	out.SetVersion(inner.Version)
	resp.ResponseData = appendResponseFrame(nil, inner.CorrelationID, out)
	return resp
}

// parseEnvelope decodes an envelope's request and principal: a request
// that does not decode (or is itself an envelope) is INVALID_REQUEST, a
// principal that does not PRINCIPAL_DESERIALIZATION_FAILURE.
func parseEnvelope(env *kmsg.EnvelopeRequest) (*protocol.Request, Caller, error) {
	inner, err := protocol.ParseRequest(env.RequestData)
	if err != nil {
		return nil, Caller{}, fmt.Errorf("%w: its request does not decode: %v", kerr.InvalidRequest, err)
	}
	if inner.Key == (&kmsg.EnvelopeRequest{}).Key() {
		return nil, Caller{}, fmt.Errorf("%w: an envelope in an envelope", kerr.InvalidRequest)
	}
	pd := kmsg.NewDefaultPrincipalData()
	if err := pd.ReadFrom(env.RequestPrincipal); err != nil || pd.Type == "" {
		return nil, Caller{}, fmt.Errorf("%w: its principal does not decode: %v", kerr.PrincipalDeserializationFailure, err)
	}
	return inner, Caller{Principal: principal.Principal{Type: pd.Type, Name: pd.Name}, ClientID: inner.ClientIDString()}, nil
}

// errorCodeOf is the Kafka code a parseEnvelope error wraps.
func errorCodeOf(err error) int16 {
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return ke.Code
	}
	return kerr.InvalidRequest.Code
}

// appendResponseFrame is a response with its header and without the size
// prefix, as ResponseData carries it.
func appendResponseFrame(dst []byte, correlationID int32, resp kmsg.Response) []byte {
	dst = binary.BigEndian.AppendUint32(dst, uint32(correlationID))
	if resp.IsFlexible() {
		dst = append(dst, 0)
	}
	return resp.AppendTo(dst)
}
