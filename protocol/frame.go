package protocol

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// ApiVersionsKey is the key of the ApiVersions API, which has special framing
// rules (response header v0 always, v0 fallback for unknown versions).
const ApiVersionsKey = 18

var (
	// ErrFrameTooLarge is returned for a frame above the configured limit.
	ErrFrameTooLarge = errors.New("protocol: frame exceeds socket.request.max.bytes")
	// ErrBadFrame is returned for a frame that cannot be a Kafka request.
	ErrBadFrame = errors.New("protocol: malformed frame")
)

// readFrame reads one size-prefixed frame into a buffer from pool. The
// returned slice is owned by the caller: decoded request bodies alias it
// (kmsg byte fields are sub-slices).
func readFrame(r io.Reader, maxBytes int32, sizeBuf *[4]byte, pool *framePool) ([]byte, error) {
	if _, err := io.ReadFull(r, sizeBuf[:]); err != nil {
		return nil, err
	}
	size := int32(binary.BigEndian.Uint32(sizeBuf[:]))
	if size < 8 { // key + version + correlation id at least
		return nil, fmt.Errorf("%w: size %d", ErrBadFrame, size)
	}
	if size > maxBytes {
		return nil, fmt.Errorf("%w: %d > %d", ErrFrameTooLarge, size, maxBytes)
	}
	buf := pool.get(int(size))
	if _, err := io.ReadFull(r, buf); err != nil {
		pool.put(buf)
		return nil, fmt.Errorf("reading %d-byte frame: %w", size, err)
	}
	return buf, nil
}

// ParseRequest decodes a frame (without its size prefix) into a Request.
// Header errors are returned with the header decoded so far, so that the caller
// can log the correlation id; body errors come back with Header filled in.
func ParseRequest(frame []byte) (*Request, error) {
	rd := kbin.Reader{Src: frame}
	var h Header
	h.Key = rd.Int16()
	h.Version = rd.Int16()
	h.CorrelationID = rd.Int32()
	h.ClientID = rd.NullableString()
	if !rd.Ok() {
		return &Request{Header: h}, fmt.Errorf("%w: short request header", ErrBadFrame)
	}
	body := kmsg.RequestForKey(h.Key)
	if body == nil {
		return &Request{Header: h}, fmt.Errorf("%w: unknown api key %d", ErrBadFrame, h.Key)
	}
	if h.Version < 0 {
		return &Request{Header: h}, fmt.Errorf("%w: negative version %d for key %d", ErrBadFrame, h.Version, h.Key)
	}
	body.SetVersion(h.Version)
	if body.IsFlexible() {
		skipTags(&rd)
		if !rd.Ok() {
			return &Request{Header: h}, fmt.Errorf("%w: bad header tagged fields", ErrBadFrame)
		}
	}
	req := &Request{Header: h, Body: body, Size: len(frame) + 4}
	if h.Version > body.MaxVersion() {
		if h.Key == ApiVersionsKey {
			// KIP-511: answer with our versions at v0 rather than failing.
			return req, nil
		}
		return req, fmt.Errorf("%w: version %d of key %d is newer than this build decodes", ErrBadFrame, h.Version, h.Key)
	}
	if err := body.ReadFrom(rd.Src); err != nil {
		if h.Key == ApiVersionsKey {
			fresh := kmsg.NewPtrApiVersionsRequest()
			fresh.SetVersion(h.Version)
			req.Body = fresh
			return req, nil
		}
		return req, fmt.Errorf("%w: decoding key %d v%d: %v", ErrBadFrame, h.Key, h.Version, err)
	}
	return req, nil
}

func skipTags(rd *kbin.Reader) {
	n := rd.Uvarint()
	for i := uint32(0); i < n && rd.Ok(); i++ {
		rd.Uvarint() // tag
		size := rd.Uvarint()
		rd.Span(int(size))
	}
}

// appendResponse appends a size-prefixed response frame to dst. The response
// header is v1 (with tagged fields) for flexible versions except for
// ApiVersions, which always uses v0.
func appendResponse(dst []byte, correlationID int32, resp kmsg.Response) []byte {
	start := len(dst)
	dst = append(dst, 0, 0, 0, 0)
	dst = kbin.AppendInt32(dst, correlationID)
	if resp.IsFlexible() && resp.Key() != ApiVersionsKey {
		dst = append(dst, 0) // no header tagged fields
	}
	dst = resp.AppendTo(dst)
	binary.BigEndian.PutUint32(dst[start:], uint32(len(dst)-start-4))
	return dst
}
