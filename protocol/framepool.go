package protocol

import (
	"math/bits"
	"sync"
)

// framePool recycles request frame buffers for the APIs whose handlers are
// done with the request bytes when Handle returns (Produce copies records
// into the log; Fetch decodes into its own structures). Allocating a fresh,
// zeroed buffer per produce request was most of the broker's allocation and
// a tenth of its CPU under load. Buffers come in power-of-two classes from
// 4 KiB to 16 MiB; larger frames are allocated and left to the GC.
type framePool struct {
	classes [13]sync.Pool // 4 KiB << i
}

const (
	minPooledFrame = 4 << 10
	maxPooledFrame = minPooledFrame << 12 // 16 MiB
)

func frameClass(n int) int {
	if n <= minPooledFrame {
		return 0
	}
	return bits.Len(uint(n-1)) - bits.Len(uint(minPooledFrame-1))
}

// get returns a buffer of length n.
func (p *framePool) get(n int) []byte {
	if n > maxPooledFrame {
		return make([]byte, n)
	}
	c := frameClass(n)
	if b, ok := p.classes[c].Get().(*[]byte); ok {
		return (*b)[:n]
	}
	return make([]byte, n, minPooledFrame<<c)
}

// put recycles b, which no one may use afterwards.
func (p *framePool) put(b []byte) {
	c := cap(b)
	if c < minPooledFrame || c > maxPooledFrame || c&(c-1) != 0 {
		return
	}
	b = b[:c]
	p.classes[frameClass(c)].Put(&b)
}

// recyclable reports whether a request's frame may be reused as soon as its
// handler returns.
func recyclable(key int16) bool { return key == 0 || key == 1 }
