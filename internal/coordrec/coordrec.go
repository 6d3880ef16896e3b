// Package coordrec holds the byte-level helpers of Kafka's coordinator
// records (the keys and values of __consumer_offsets and
// __share_group_state): non-flexible keys that start with an int16 record
// type, and flexible values (KIP-482) that start with an int16 version,
// use compact strings and arrays (uvarint length + 1) and close every
// struct with a tagged-field section:
//
//	tags: | uvarint count | count x ( uvarint tag | uvarint size | size bytes ) |
//
// Decoders built on it never panic on bad input: a short or inconsistent
// buffer is ErrCorrupt.
package coordrec

import (
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kbin"
)

// ErrCorrupt is returned for any record that does not decode.
var ErrCorrupt = errors.New("corrupt coordinator record")

// Tag is one tagged field to write.
type Tag struct {
	ID   uint32
	Data []byte
}

// AppendTags closes a flexible struct with the given tagged fields (in
// ascending tag order, as Kafka writes them).
func AppendTags(b []byte, tags ...Tag) []byte {
	b = kbin.AppendUvarint(b, uint32(len(tags)))
	for _, t := range tags {
		b = kbin.AppendUvarint(b, t.ID)
		b = kbin.AppendUvarint(b, uint32(len(t.Data)))
		b = append(b, t.Data...)
	}
	return b
}

// Value starts reading a flexible value: it checks the int16 version.
func Value(value []byte, version int16) (*kbin.Reader, error) {
	r := &kbin.Reader{Src: value}
	v := r.Int16()
	if !r.Ok() {
		return nil, fmt.Errorf("%w: value of %d bytes", ErrCorrupt, len(value))
	}
	if v != version {
		return nil, fmt.Errorf("%w: value version %d, want %d", ErrCorrupt, v, version)
	}
	return r, nil
}

// ReadTags reads a tagged-field section, handing each field to fn (nil:
// skip them all, as unknown tags are skipped).
func ReadTags(r *kbin.Reader, fn func(tag uint32, data []byte)) error {
	n := r.Uvarint()
	for i := uint32(0); i < n; i++ {
		tag := r.Uvarint()
		size := r.Uvarint()
		if !r.Ok() || uint64(size) > uint64(len(r.Src)) {
			return ErrCorrupt
		}
		data := r.Span(int(size))
		if fn != nil {
			fn(tag, data)
		}
	}
	if !r.Ok() {
		return ErrCorrupt
	}
	return nil
}

// ArrayLen reads a compact array length; each element takes at least
// minSize bytes, so a length the rest of the buffer cannot hold is corrupt
// (and never allocates). A null array is length 0.
func ArrayLen(r *kbin.Reader, minSize int) (int, error) {
	n := r.CompactArrayLen()
	if !r.Ok() || n < -1 {
		return 0, ErrCorrupt
	}
	if n <= 0 {
		return 0, nil
	}
	if minSize > 0 && int(n) > len(r.Src)/minSize {
		return 0, ErrCorrupt
	}
	return int(n), nil
}

// Done checks that the reader consumed the value exactly.
func Done(r *kbin.Reader) error {
	if r.Complete() != nil || len(r.Src) != 0 {
		return ErrCorrupt
	}
	return nil
}

// GroupKey is | int16 type | int16 len | group |.
func GroupKey(typ int16, group string) []byte {
	return kbin.AppendString(kbin.AppendInt16(nil, typ), group)
}

// Type returns the record type a key starts with.
func Type(key []byte) (int16, error) {
	if len(key) < 2 {
		return 0, fmt.Errorf("%w: key of %d bytes", ErrCorrupt, len(key))
	}
	return int16(uint16(key[0])<<8 | uint16(key[1])), nil
}
