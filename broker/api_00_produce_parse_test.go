//go:build recordcount

package broker

import (
	"context"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/config"
	"github.com/kbroker/kbroker/internal/testsupport"
	"github.com/kbroker/kbroker/protocol"
	"github.com/kbroker/kbroker/record"
)

// TestProduceParsesBatchOnce shows that a produce's batch header is parsed
// once on its way from the handler to the log: validation, size, key and
// timestamp checks in the broker, replication's leader append, storage's
// append with offsets, epoch and LogAppendTime. Under the recordcount build
// tag (go test -tags recordcount; make unit runs it) the record package
// counts every ParseBatchHeader per buffer, so a second parse anywhere on the
// path makes the count 2. The request is handed to the handler as decoded,
// so the records are the test's own buffer.
func TestProduceParsesBatchOnce(t *testing.T) {
	for _, c := range []struct {
		name   string
		broker func(*config.Config)
		acks   int16
		batch  func(testing.TB) []byte
	}{
		{"create-time acks=1", func(*config.Config) {}, 1, func(testing.TB) []byte { return benchBatch(10, 100) }},
		{"create-time acks=all", func(*config.Config) {}, -1, func(testing.TB) []byte { return benchBatch(10, 100) }},
		{"compacted log-append-time lz4", func(cfg *config.Config) {
			cfg.LogCleanupPolicy, cfg.LogMessageTimestampType = []string{"compact"}, "LogAppendTime"
		}, -1, func(tb testing.TB) []byte {
			return keyedBatch(tb, record.CompressionLZ4, false, []byte("a"), []byte("b"))
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			br := startTestBroker(t, c.broker)
			createTopic(t, br, "once")
			batch := c.batch(t)
			before := record.ParseCount(batch)
			req := testsupport.ProduceRequest("once", 0, c.acks, 30000, batch)
			resp := br.handleProduce(context.Background(), &protocol.Request{Body: req})
			body := resp.Body
			if resp.Later != nil {
				body = resp.Later(context.Background())
			}
			p := body.(*kmsg.ProduceResponse).Topics[0].Partitions[0]
			if p.ErrorCode != 0 || p.BaseOffset != 0 {
				t.Fatalf("produce: error %d, base offset %d", p.ErrorCode, p.BaseOffset)
			}
			if n := record.ParseCount(batch) - before; n != 1 {
				t.Fatalf("the batch header was parsed %d times, want once", n)
			}
		})
	}
}
