package main

// A client connection without a client library. The connections workload
// holds its idle connections this way (each has completed ApiVersions, as
// every Kafka client's first request, and then sends nothing), so the
// broker's memory per connection is measured without a client's own
// connections for metadata, produce and group requests mixed in; and the
// partitions workload times full Metadata with it, from the request's first
// byte to the response's last, with none of a client's decoding in it.

import (
	"bufio"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

const rawClientID = "kbench-raw"

// rawConn is one connection that has completed ApiVersions.
type rawConn struct {
	c        net.Conn
	rd       *bufio.Reader
	corr     int32
	versions map[int16]int16 // the broker's highest version of each API key
}

// dialRaw connects to addr and sends ApiVersions v3.
func dialRaw(ctx context.Context, addr string) (*rawConn, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	rc, err := handshakeRaw(ctx, c)
	if err != nil {
		c.Close()
		return nil, err
	}
	return rc, nil
}

// handshakeRaw sends ApiVersions v3 on c (plain TCP or TLS) and learns
// the broker's versions; the caller closes c on an error.
func handshakeRaw(ctx context.Context, c net.Conn) (*rawConn, error) {
	addr := c.RemoteAddr().String()
	rc := &rawConn{c: c, rd: bufio.NewReader(c), versions: map[int16]int16{}}
	req := kmsg.NewPtrApiVersionsRequest()
	req.Version = 3
	req.ClientSoftwareName, req.ClientSoftwareVersion = "kbench", "1"
	resp := kmsg.NewPtrApiVersionsResponse()
	if err := rc.do(ctx, req, resp); err != nil {
		return nil, fmt.Errorf("ApiVersions to %s: %w", addr, err)
	}
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		return nil, fmt.Errorf("ApiVersions to %s: %w", addr, err)
	}
	for _, k := range resp.ApiKeys {
		rc.versions[k.ApiKey] = k.MaxVersion
	}
	return rc, nil
}

func (rc *rawConn) Close() error { return rc.c.Close() }

// version is the highest version of req's API both sides speak, or -1.
func (rc *rawConn) version(req kmsg.Request) int16 {
	v, ok := rc.versions[req.Key()]
	if !ok {
		return -1
	}
	return min(v, req.MaxVersion())
}

// do sends req at its set version and decodes the answer into resp.
func (rc *rawConn) do(ctx context.Context, req kmsg.Request, resp kmsg.Response) error {
	body, err := rc.roundTrip(ctx, req)
	if err != nil {
		return err
	}
	resp.SetVersion(req.GetVersion())
	return resp.ReadFrom(body)
}

// roundTrip sends req at its set version and returns the response body
// (the header read past), all of it read from the socket.
func (rc *rawConn) roundTrip(ctx context.Context, req kmsg.Request) ([]byte, error) {
	deadline, ok := ctx.Deadline()
	if !ok {
		deadline = time.Now().Add(30 * time.Second)
	}
	rc.c.SetDeadline(deadline)
	rc.corr++
	if _, err := rc.c.Write(appendRawRequest(nil, rc.corr, req)); err != nil {
		return nil, err
	}
	var size [4]byte
	if _, err := io.ReadFull(rc.rd, size[:]); err != nil {
		return nil, err
	}
	frame := make([]byte, binary.BigEndian.Uint32(size[:]))
	if _, err := io.ReadFull(rc.rd, frame); err != nil {
		return nil, err
	}
	return parseRawResponse(frame, rc.corr, req)
}

// appendRawRequest frames req: size, header v1 (v2 with tagged fields for
// a flexible request), body.
func appendRawRequest(dst []byte, corr int32, req kmsg.Request) []byte {
	start := len(dst)
	dst = append(dst, 0, 0, 0, 0)
	dst = kbin.AppendInt16(dst, req.Key())
	dst = kbin.AppendInt16(dst, req.GetVersion())
	dst = kbin.AppendInt32(dst, corr)
	dst = kbin.AppendNullableString(dst, kmsg.StringPtr(rawClientID))
	if req.IsFlexible() {
		dst = append(dst, 0) // no tagged fields
	}
	dst = req.AppendTo(dst)
	binary.BigEndian.PutUint32(dst[start:], uint32(len(dst)-start-4))
	return dst
}

// parseRawResponse checks a response frame's correlation id and skips its
// header (v1 for a flexible response, except ApiVersions' which is always
// v0), returning the body.
func parseRawResponse(frame []byte, corr int32, req kmsg.Request) ([]byte, error) {
	rd := kbin.Reader{Src: frame}
	if got := rd.Int32(); got != corr {
		return nil, fmt.Errorf("response correlation id %d, want %d", got, corr)
	}
	if req.IsFlexible() && req.Key() != 18 {
		for n := rd.Uvarint(); n > 0 && rd.Ok(); n-- {
			rd.Uvarint()
			rd.Span(int(rd.Uvarint()))
		}
	}
	if !rd.Ok() {
		return nil, fmt.Errorf("short response header (%d bytes)", len(frame))
	}
	return rd.Src, nil
}

// allTopicsRequest is a Metadata request for every topic at the highest
// version c and kmsg share.
func allTopicsRequest(c *rawConn) (*kmsg.MetadataRequest, error) {
	req := kmsg.NewPtrMetadataRequest()
	if req.Version = c.version(req); req.Version < 1 {
		return nil, fmt.Errorf("broker does not offer Metadata v1+")
	}
	req.Topics = nil // all topics (v1+)
	return req, nil
}
