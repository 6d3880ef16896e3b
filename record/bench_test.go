package record

import (
	"fmt"
	"testing"
)

// BenchmarkParseProduce is the produce path's one parse of a batch: header,
// structure, CRC-32C over the batch, record count (what storage's
// BenchmarkValidateBatch measured before the format moved here).
func BenchmarkParseProduce(b *testing.B) {
	for _, size := range []int{1 << 10, 16 << 10} {
		s := spec(1, 0)
		s.valueSize = size - 80
		batch := s.build(b)
		b.Run(fmt.Sprintf("%dKiB", size>>10), func(b *testing.B) {
			b.SetBytes(int64(len(batch)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := ParseProduce(batch); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
