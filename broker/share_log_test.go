package broker

import (
	"bytes"
	"testing"

	"github.com/kbroker/kbroker/broker/sharepartition"
	"github.com/kbroker/kbroker/record"
)

// The batches holding acquired records are handed out whole; next to each
// other in the read, they are a slice of it (no copy: the mapped segment
// goes to the response), and with a batch skipped between them a copy of
// just those batches.
func TestAcquiredBatches(t *testing.T) {
	var data []byte
	var batches [][]byte
	for i := range 4 { // offsets 0-9, 10-19, 20-29, 30-39
		b := record.NewBatch(record.BatchHeader{BaseOffset: int64(10 * i), LastOffsetDelta: 9, RecordCount: 10}, nil).Bytes()
		batches = append(batches, b)
		data = append(data, b...)
	}
	ranges := func(rs ...[2]int64) []sharepartition.AcquiredRange {
		var out []sharepartition.AcquiredRange
		for _, r := range rs {
			out = append(out, sharepartition.AcquiredRange{FirstOffset: r[0], LastOffset: r[1], DeliveryCount: 1})
		}
		return out
	}
	for _, tc := range []struct {
		name    string
		ranges  []sharepartition.AcquiredRange
		want    []int // batch indexes
		aliases bool
	}{
		{"one batch", ranges([2]int64{12, 15}), []int{1}, true},
		{"contiguous", ranges([2]int64{5, 9}, [2]int64{10, 25}), []int{0, 1, 2}, true},
		{"a batch skipped", ranges([2]int64{3, 4}, [2]int64{33, 33}), []int{0, 3}, false},
		{"skipped, then contiguous", ranges([2]int64{0, 0}, [2]int64{20, 39}), []int{0, 2, 3}, false},
		{"none", nil, nil, false},
	} {
		got := acquiredBatches(data, tc.ranges)
		var want []byte
		for _, i := range tc.want {
			want = append(want, batches[i]...)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s: %d bytes, want batches %v (%d bytes)", tc.name, len(got), tc.want, len(want))
		}
		inData := false
		for i := range data {
			if len(got) > 0 && &got[0] == &data[i] {
				inData = true
			}
		}
		if inData != tc.aliases {
			t.Errorf("%s: a slice of the read: %v, want %v", tc.name, inData, tc.aliases)
		}
		if len(got) > 0 && cap(got) != len(got) && inData {
			t.Errorf("%s: a slice of the read with room to append into it", tc.name)
		}
	}
}
