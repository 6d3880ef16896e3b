package protocol

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/binary"
	"net"
	"os"
	"path/filepath"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// fetchVectors answers every request with a response whose body is one
// record set of a file: sent with sendfile when the file is given, with
// writev from memory when not, and copied through the buffered writer on
// a TLS connection (crypto/tls encrypts; the zero-copy paths cannot go
// through it).
type fetchVectors struct {
	data []byte
	file *os.File
}

type vectorBody struct {
	*kmsg.FetchResponse
	v *fetchVectors
}

func (b vectorBody) AppendVectors(vs []Vector, scratch []byte) []Vector {
	head := binaryAppendLen(scratch, len(b.v.data))
	return append(vs, Vector{B: head}, Vector{B: b.v.data, File: b.v.file})
}

func binaryAppendLen(dst []byte, n int) []byte { return binary.BigEndian.AppendUint32(dst, uint32(n)) }

func (h *fetchVectors) Handle(_ context.Context, req *Request) Response {
	resp := req.Body.ResponseKind().(*kmsg.FetchResponse)
	return Response{Body: vectorBody{resp, h}}
}

func (h *fetchVectors) ErrorResponse(req *Request, _ int16) kmsg.Response {
	return req.Body.ResponseKind()
}

// BenchmarkConnFetchTLS is the cost of TLS on the fetch path: 1 MiB record
// sets served from a file, pipelined four deep, through sendfile
// (plaintext), writev (plaintext, no file) and TLS (copied and encrypted).
// BENCHMARKS.md quotes it.
func BenchmarkConnFetchTLS(b *testing.B) {
	const size = 1 << 20
	data := randomBytes(7, size)
	path := filepath.Join(b.TempDir(), "segment.log")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		b.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	pki := newTestPKI(b)
	for _, tc := range []struct {
		name string
		file *os.File
		tls  bool
	}{{"sendfile", f, false}, {"writev", nil, false}, {"tls", f, true}} {
		b.Run(tc.name, func(b *testing.B) {
			var sec ListenerSecurity
			if tc.tls {
				sec.TLS = pki.serverConfig(tls.NoClientCert)
			}
			l, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				b.Fatal(err)
			}
			s := NewServer(&fetchVectors{data: data, file: tc.file}, ServerOptions{Listeners: map[string]ListenerSecurity{"L": sec}})
			go s.Serve(l, "L")
			defer s.Close()
			nc, err := net.Dial("tcp", l.Addr().String())
			if err != nil {
				b.Fatal(err)
			}
			if tc.tls {
				cfg, _ := pki.clientConfig(false)("127.0.0.1")
				nc = tls.Client(nc, cfg)
			}
			defer nc.Close()
			req := kmsg.NewPtrFetchRequest()
			req.SetVersion(12)
			frame := appendRequest(nil, 1, "bench", req)
			const window = 4
			b.SetBytes(size)
			b.ReportAllocs()
			b.ResetTimer()
			n := b.N
			done := make(chan error, 1)
			go func() { done <- readResponses(nc, n) }()
			w := bufio.NewWriter(nc)
			for i := range n {
				if _, err := w.Write(frame); err != nil {
					b.Fatal(err)
				}
				if i%window == window-1 || i == n-1 {
					w.Flush()
				}
			}
			if err := <-done; err != nil {
				b.Fatal(err)
			}
		})
	}
}
