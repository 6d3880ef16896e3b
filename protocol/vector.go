package protocol

import (
	"net"
	"os"
)

// Vector is one piece of a VectorResponse. B holds the bytes. When File is
// set, B is a copy (a mapping) of File's bytes at Offset, and the
// connection may send them with sendfile(2) from the page cache instead of
// copying them from B into the socket: for a follower fetch that is one
// copy fewer per replicated byte (Kafka's FileChannel.transferTo).
type Vector struct {
	B      []byte
	File   *os.File
	Offset int64
}

// vectorWriter writes a VectorResponse's pieces: runs of memory with one
// writev, file pieces with sendfile when the socket supports it.
type vectorWriter struct {
	nc net.Conn
	// sf sends file pieces; nil when the connection cannot (not TCP, or
	// not Linux), and every piece then goes out from B.
	sf *fileSender
	// vecs and bufs are reused between responses.
	vecs []Vector
	bufs net.Buffers
}

func newVectorWriter(nc net.Conn) *vectorWriter {
	return &vectorWriter{nc: nc, sf: newFileSender(nc)}
}

// write sends vs in order.
func (vw *vectorWriter) write(vs []Vector) error {
	hasFile := false
	for _, v := range vs {
		if v.File != nil && len(v.B) > 0 {
			hasFile = true
			break
		}
	}
	if vw.sf == nil || !hasFile {
		return vw.writev(vs)
	}
	// Cork so that the small fields between record sets do not each go
	// out as their own packet; uncorking pushes the tail.
	vw.sf.cork(true)
	defer vw.sf.cork(false)
	start := 0
	for i, v := range vs {
		if v.File == nil || len(v.B) == 0 {
			continue
		}
		if err := vw.writev(vs[start:i]); err != nil {
			return err
		}
		sent, err := vw.sf.sendFile(v.File, v.Offset, len(v.B))
		if err != nil {
			return err
		}
		// A file closed under us (the segment rolled) or a socket that
		// refuses sendfile: the mapping still holds the bytes.
		if sent < len(v.B) {
			if err := vw.writev([]Vector{{B: v.B[sent:]}}); err != nil {
				return err
			}
		}
		start = i + 1
	}
	return vw.writev(vs[start:])
}

func (vw *vectorWriter) writev(vs []Vector) error {
	if len(vs) == 0 {
		return nil
	}
	bufs := vw.bufs[:0]
	for _, v := range vs {
		if len(v.B) > 0 {
			bufs = append(bufs, v.B)
		}
	}
	vw.bufs = bufs[:0]
	_, err := bufs.WriteTo(vw.nc)
	clear(vw.bufs[:cap(vw.bufs)]) // do not pin mapped segments
	return err
}
