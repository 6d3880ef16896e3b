package storage

import "testing"

func TestRecordIterAllCodecs(t *testing.T) {
	codecs := []struct {
		name   string
		c      Compression
		xerial bool
	}{
		{"none", CompressionNone, false}, {"gzip", CompressionGzip, false}, {"snappy", CompressionSnappy, false},
		{"snappy-xerial", CompressionSnappy, true}, {"lz4", CompressionLZ4, false}, {"zstd", CompressionZstd, false},
	}
	for _, c := range codecs {
		t.Run(c.name, func(t *testing.T) {
			s := spec(5, 0)
			s.timestamps = []int64{100, 90, 130, 120, 130}
			s.baseOffset, s.compression, s.xerial, s.valueSize = 40, c.c, c.xerial, 300
			it, err := newRecordIter(s.build(t))
			if err != nil {
				t.Fatal(err)
			}
			for i, ts := range s.timestamps {
				r, ok := it.next()
				if !ok || r.Offset != 40+int64(i) || r.Timestamp != ts {
					t.Fatalf("record %d: %+v ok=%v err=%v", i, r, ok, it.err)
				}
			}
			if _, ok := it.next(); ok {
				t.Fatal("extra record")
			}
		})
	}
}

func TestRecordIterLogAppendTime(t *testing.T) {
	b := spec(3, 100).build(t)
	SetLogAppendTime(b, 999)
	it, err := newRecordIter(b)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		if r, ok := it.next(); !ok || r.Timestamp != 999 {
			t.Fatalf("record %d: %+v", i, r)
		}
	}
}

func TestRecordIterCorrupt(t *testing.T) {
	s := spec(2, 0)
	s.compression = CompressionGzip
	b := s.build(t)
	b[len(b)-3] ^= 0xff
	if it, err := newRecordIter(b); err == nil {
		for _, ok := it.next(); ok; _, ok = it.next() {
		}
	}
	// Truncated uncompressed records stop without panicking.
	b = spec(2, 0).build(t)
	it, err := newRecordIter(b[:len(b)-4])
	if err != nil {
		t.Fatal(err)
	}
	it.next()
	if _, ok := it.next(); ok {
		t.Fatal("decoded a cut record")
	}
}
