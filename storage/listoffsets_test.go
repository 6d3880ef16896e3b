package storage

import (
	"math"
	"testing"

	"github.com/kbroker/kbroker/record"
)

// ListOffsets by timestamp returns the first RECORD with timestamp >= ts,
// decoding inside a (possibly compressed) batch; -3 returns the record
// carrying the largest timestamp (KIP-734).
func TestOffsetForTimestampAndMaxTimestamp(t *testing.T) {
	codecs := []record.Compression{record.CompressionNone, record.CompressionGzip, record.CompressionSnappy, record.CompressionLZ4, record.CompressionZstd}
	for _, c := range codecs {
		t.Run(c.String(), func(t *testing.T) {
			e := newTestEnv(t)
			l := e.open(smallConfig(), LogState{})
			defer l.Close()
			// 60 batches of 4 records; batch i has timestamps
			// 1000+10i + {0, 5, 2, 7}: records are not in time order.
			for i := 0; i < 60; i++ {
				s := spec(4, 0)
				base := int64(1000 + 10*i)
				s.timestamps = []int64{base, base + 5, base + 2, base + 7}
				s.compression, s.valueSize = c, 30
				if _, err := l.AppendAsLeader(leaderBatches(t, s.build(t)), 0, AppendOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			if l.NumSegments() < 2 {
				t.Fatalf("want several segments, have %d", l.NumSegments())
			}
			cases := []struct {
				ts, wantOff, wantTs int64
			}{
				{0, 0, 1000},      // before everything: first record
				{1000, 0, 1000},   // exact
				{1001, 1, 1005},   // inside a batch: second record
				{1006, 3, 1007},   // fourth record
				{1008, 4, 1010},   // next batch
				{1353, 141, 1355}, // deep in a later segment
				{1597, 239, 1597}, // the very last record
			}
			for _, cs := range cases {
				off, ts, ok := l.OffsetForTimestamp(cs.ts)
				if !ok || off != cs.wantOff || ts != cs.wantTs {
					t.Errorf("OffsetForTimestamp(%d) = (%d, %d, %v), want (%d, %d)", cs.ts, off, ts, ok, cs.wantOff, cs.wantTs)
				}
			}
			if off, _, ok := l.OffsetForTimestamp(1598); ok {
				t.Errorf("timestamp after every record found offset %d", off)
			}
			if ts, off := l.MaxTimestamp(); ts != 1597 || off != 239 {
				t.Errorf("MaxTimestamp = (%d, %d)", ts, off)
			}
		})
	}
}

func TestMaxTimestampIsFirstRecordCarryingIt(t *testing.T) {
	e := newTestEnv(t)
	l := e.open(smallConfig(), LogState{})
	defer l.Close()
	s := spec(4, 0)
	s.timestamps = []int64{10, 50, 20, 50}
	l.AppendAsLeader(leaderBatches(t, s.build(t)), 0, AppendOptions{})
	l.AppendAsLeader(leaderBatches(t, spec(2, 30).build(t)), 0, AppendOptions{})
	s.timestamps = []int64{1, 50, 2, 3} // equal max later: the first one wins
	l.AppendAsLeader(leaderBatches(t, s.build(t)), 0, AppendOptions{})
	if ts, off := l.MaxTimestamp(); ts != 50 || off != 1 {
		t.Fatalf("MaxTimestamp = (%d, %d)", ts, off)
	}
	// LogAppendTime batches: every record has the batch timestamp.
	l.AppendAsLeader(leaderBatches(t, spec(3, 0).build(t)), 0, AppendOptions{LogAppendTime: true})
	now := e.clock.Now().UnixMilli()
	if ts, off := l.MaxTimestamp(); ts != now || off != 10 {
		t.Fatalf("MaxTimestamp with LogAppendTime = (%d, %d)", ts, off)
	}
	if off, ts, ok := l.OffsetForTimestamp(now); !ok || off != 10 || ts != now {
		t.Fatalf("OffsetForTimestamp = (%d, %d, %v)", off, ts, ok)
	}
}

func TestOffsetForTimestampRespectsLogStart(t *testing.T) {
	e := newTestEnv(t)
	l := e.open(smallConfig(), LogState{})
	defer l.Close()
	appendN(t, l, 10, 4, 100) // offsets 0-39, timestamps 100-139
	l.SetHighWatermark(40)
	l.SetLogStartOffset(6)
	if off, ts, ok := l.OffsetForTimestamp(0); !ok || off != 6 || ts != 106 {
		t.Fatalf("got (%d, %d, %v)", off, ts, ok)
	}
	if empty := newTestEnv(t).open(smallConfig(), LogState{}); true {
		defer empty.Close()
		if ts, off := empty.MaxTimestamp(); ts != -1 || off != -1 {
			t.Fatalf("empty log max timestamp (%d, %d)", ts, off)
		}
		if _, _, ok := empty.OffsetForTimestamp(math.MinInt64); ok {
			t.Fatal("empty log found an offset")
		}
	}
}
