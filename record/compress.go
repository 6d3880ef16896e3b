package record

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
)

// maxDecompressed bounds what one batch may inflate to when its records are
// decoded, so that a compression bomb cannot exhaust memory.
const maxDecompressed = 256 << 20

var errDecompressedTooLarge = errors.New("decompressed records exceed limit")

// xerialMagic starts snappy data framed by the Java client (xerial
// SnappyOutputStream): magic, then version and compatible-version int32s,
// then blocks each preceded by a big-endian int32 length.
var xerialMagic = []byte{0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0}

// xerialBlockSize is the block size of the Java client's snappy stream.
const xerialBlockSize = 32 << 10

// IsXerial reports whether a records section is snappy in the Java client's
// xerial framing (Compressor.Compress writes it back the same way).
func IsXerial(records []byte) bool { return bytes.HasPrefix(records, xerialMagic) }

// Decompress inflates a records section compressed with c (at most 256 MiB
// out). Snappy may be raw (librdkafka, franz-go) or xerial-framed (Java).
func Decompress(c Compression, src []byte) ([]byte, error) {
	switch c {
	case CompressionNone:
		return src, nil
	case CompressionGzip:
		r, err := gzip.NewReader(bytes.NewReader(src))
		if err != nil {
			return nil, err
		}
		return readLimited(r)
	case CompressionSnappy:
		return decodeSnappy(src)
	case CompressionLZ4:
		return readLimited(lz4.NewReader(bytes.NewReader(src)))
	case CompressionZstd:
		d, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxMemory(maxDecompressed))
		if err != nil {
			return nil, err
		}
		defer d.Close()
		return d.DecodeAll(src, nil)
	}
	return nil, fmt.Errorf("unknown compression codec %d", c)
}

func readLimited(r io.Reader) ([]byte, error) {
	out, err := io.ReadAll(io.LimitReader(r, maxDecompressed+1))
	if err != nil {
		return nil, err
	}
	if len(out) > maxDecompressed {
		return nil, errDecompressedTooLarge
	}
	return out, nil
}

func decodeSnappy(src []byte) ([]byte, error) {
	if !IsXerial(src) || len(src) < 16 {
		return decodeSnappyBlock(nil, src)
	}
	var out []byte
	for rest := src[16:]; len(rest) > 0; {
		if len(rest) < 4 {
			return nil, errors.New("truncated xerial snappy chunk header")
		}
		n := binary.BigEndian.Uint32(rest)
		rest = rest[4:]
		if uint64(n) > uint64(len(rest)) {
			return nil, errors.New("truncated xerial snappy chunk")
		}
		var err error
		if out, err = decodeSnappyBlock(out, rest[:n]); err != nil {
			return nil, err
		}
		rest = rest[n:]
	}
	return out, nil
}

// decodeSnappyBlock appends the decoding of one snappy block to dst.
func decodeSnappyBlock(dst, block []byte) ([]byte, error) {
	n, err := s2.DecodedLen(block)
	if err != nil {
		return nil, err
	}
	if n > maxDecompressed-len(dst) {
		return nil, errDecompressedTooLarge
	}
	buf, err := s2.Decode(nil, block)
	if err != nil {
		return nil, err
	}
	return append(dst, buf...), nil
}

// Compressor compresses records sections the way clients do (the options
// franz-go uses towards Kafka). It keeps one zstd encoder, which Close
// releases. Not safe for concurrent use; the zero value is ready.
type Compressor struct {
	zstd *zstd.Encoder
}

// Compress compresses raw with codec; xerial frames snappy as the Java
// client does. CompressionNone returns raw itself.
func (c *Compressor) Compress(codec Compression, raw []byte, xerial bool) ([]byte, error) {
	switch codec {
	case CompressionNone:
		return raw, nil
	case CompressionGzip:
		return streamCompress(gzip.NewWriter, raw)
	case CompressionSnappy:
		if xerial {
			return appendXerial(raw), nil
		}
		return s2.EncodeSnappy(nil, raw), nil
	case CompressionLZ4:
		return streamCompress(lz4.NewWriter, raw)
	case CompressionZstd:
		if c.zstd == nil {
			enc, err := zstd.NewWriter(nil, zstd.WithWindowSize(64<<10), zstd.WithEncoderConcurrency(1), zstd.WithZeroFrames(true))
			if err != nil {
				return nil, err
			}
			c.zstd = enc
		}
		return c.zstd.EncodeAll(raw, nil), nil
	}
	return nil, fmt.Errorf("unknown compression codec %d", codec)
}

// streamCompress runs raw through a writer made by newWriter.
func streamCompress[W io.WriteCloser](newWriter func(io.Writer) W, raw []byte) ([]byte, error) {
	var buf bytes.Buffer
	w := newWriter(&buf)
	if _, err := w.Write(raw); err != nil {
		return nil, err
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// Close releases the zstd encoder.
func (c *Compressor) Close() {
	if c.zstd != nil {
		c.zstd.Close()
		c.zstd = nil
	}
}

// appendXerial frames raw as the Java client does: magic, version and
// compatible version (1, 1), then blocks of a big-endian length and a raw
// snappy block.
func appendXerial(raw []byte) []byte {
	out := append(append([]byte(nil), xerialMagic...), 0, 0, 0, 1, 0, 0, 0, 1)
	for len(raw) > 0 {
		n := min(xerialBlockSize, len(raw))
		block := s2.EncodeSnappy(nil, raw[:n])
		out = binary.BigEndian.AppendUint32(out, uint32(len(block)))
		out = append(out, block...)
		raw = raw[n:]
	}
	return out
}
