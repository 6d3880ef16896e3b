package protocol

import (
	"bytes"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"testing"
)

// tcpPair returns both ends of a loopback TCP connection.
func tcpPair(t *testing.T) (client, server net.Conn) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, _ := l.Accept()
		accepted <- c
	}()
	client, err = net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	server = <-accepted
	if server == nil {
		t.Fatal("accept failed")
	}
	t.Cleanup(func() { client.Close(); server.Close() })
	return client, server
}

// fileWith writes data to a temp file and returns it open for reading.
func fileWith(t *testing.T, data []byte) *os.File {
	t.Helper()
	path := filepath.Join(t.TempDir(), "segment.log")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

func randomBytes(seed uint64, n int) []byte {
	rng := rand.New(rand.NewPCG(seed, seed))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(rng.Uint32())
	}
	return b
}

// writeAndRead writes vs on one end of conn pair and returns what the other
// end read.
func writeAndRead(t *testing.T, w, r net.Conn, vs []Vector) []byte {
	t.Helper()
	total := 0
	for _, v := range vs {
		total += len(v.B)
	}
	got := make(chan []byte, 1)
	go func() {
		b := make([]byte, total)
		_, err := io.ReadFull(r, b)
		if err != nil {
			t.Errorf("read: %v", err)
		}
		got <- b
	}()
	if err := newVectorWriter(w).write(vs); err != nil {
		t.Fatalf("write: %v", err)
	}
	return <-got
}

// The file pieces of a response go out with sendfile from the file, not
// from their in-memory copy. The test gives the piece a B that differs from
// the file's bytes so that what arrives tells which path sent it; in the
// broker the two are the same bytes (B maps the file).
func TestVectorWriterSendsFilePiecesWithSendfile(t *testing.T) {
	fileData := randomBytes(1, 8<<20+123) // larger than the socket buffers: sendfile meets EAGAIN
	f := fileWith(t, fileData)
	const off = 4097
	n := 6<<20 + 7
	decoy := bytes.Repeat([]byte{0xEE}, n)
	head, mid, tail := []byte("head-"), []byte("-mid-"), []byte("-tail")
	small := fileData[100:200]
	vs := []Vector{{B: head}, {B: decoy, File: f, Offset: off}, {B: mid}, {B: bytes.Repeat([]byte{0xDD}, 100), File: f, Offset: 100}, {B: tail}}

	w, r := tcpPair(t)
	got := writeAndRead(t, w, r, vs)

	want := slices.Concat(head, fileData[off:off+n], mid, small, tail)
	if runtime.GOOS != "linux" {
		want = slices.Concat(head, decoy, mid, bytes.Repeat([]byte{0xDD}, 100), tail)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("received %d bytes that differ from what sendfile should send (%d bytes)", len(got), len(want))
	}
}

// A file closed before the write (a segment roll) is no error: the bytes go
// out from memory.
func TestVectorWriterFallsBackWhenFileClosed(t *testing.T) {
	f := fileWith(t, randomBytes(2, 1<<16))
	f.Close()
	b := randomBytes(3, 1<<16)
	w, r := tcpPair(t)
	got := writeAndRead(t, w, r, []Vector{{B: []byte("h")}, {B: b, File: f}, {B: []byte("t")}})
	if want := slices.Concat([]byte("h"), b, []byte("t")); !bytes.Equal(got, want) {
		t.Fatal("bytes of a closed file's piece did not come from memory")
	}
}

// A connection that is not TCP (here a pipe) writes every piece from memory.
func TestVectorWriterWithoutTCPWritesMemory(t *testing.T) {
	f := fileWith(t, randomBytes(4, 1<<16))
	b := randomBytes(5, 1<<16)
	w, r := net.Pipe()
	defer w.Close()
	defer r.Close()
	got := writeAndRead(t, w, r, []Vector{{B: b, File: f}, {B: []byte("t")}})
	if want := slices.Concat(b, []byte("t")); !bytes.Equal(got, want) {
		t.Fatal("a pipe connection did not write the pieces from memory")
	}
}

// A broken connection is an error for the writer, not a silent short frame.
func TestVectorWriterReportsBrokenSocket(t *testing.T) {
	f := fileWith(t, randomBytes(6, 8<<20))
	w, r := tcpPair(t)
	r.Close()
	var err error
	// The peer's close is noticed once the kernel sees the reset: a few
	// large writes always get there.
	for range 4 {
		if err = newVectorWriter(w).write([]Vector{{B: make([]byte, 8<<20), File: f}}); err != nil {
			break
		}
	}
	if err == nil {
		t.Fatal("writing 32 MiB to a closed peer reported no error")
	}
}
