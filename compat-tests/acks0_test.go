package compat

import (
	"encoding/binary"
	"errors"
	"io"
	"net"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/internal/testsupport"
)

// A Produce with acks=0 is never answered, as Kafka's: on one connection,
// two acks=0 produces and then an ApiVersions get exactly one response,
// ApiVersions'. An acks=0 produce that fails (a partition that does not
// exist) closes the connection, without an answer, so that the client
// notices (KafkaApis.handleProduceRequest). The records of the acks=0
// produces are written. sarama's TestFuncProducingNoResponse counts the
// acknowledgements its producer reports without waiting. Issue 21.
func TestAcksZeroNeverAnswered(t *testing.T) {
	tg := singleNode(t)
	adm := newAdmin(t, tg.seeds)
	topic := newTopic(t, adm, 1, 1, nil)

	conn, err := net.DialTimeout("tcp", tg.seeds[0], 5*time.Second)
	must(t, err, "dial")
	defer conn.Close()
	f := kmsg.NewRequestFormatter(kmsg.FormatterClientID("acks0"))
	send := func(corr int32, req kmsg.Request) {
		t.Helper()
		_, err := conn.Write(f.AppendRequest(nil, req, corr))
		must(t, err, "write request %d", corr)
	}
	batch := testsupport.RecordBatch([][]byte{[]byte("a"), []byte("b")}, nil)
	send(1, testsupport.ProduceRequest(topic, 0, 0, 5000, batch))
	send(2, testsupport.ProduceRequest(topic, 0, 0, 5000, batch))
	av := kmsg.NewPtrApiVersionsRequest()
	av.SetVersion(0)
	send(3, av)

	conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	var head [8]byte
	_, err = io.ReadFull(conn, head[:])
	must(t, err, "reading the first response")
	if corr := int32(binary.BigEndian.Uint32(head[4:])); corr != 3 {
		t.Fatalf("the first response has correlation id %d: an acks=0 produce was answered", corr)
	}
	rest := make([]byte, int32(binary.BigEndian.Uint32(head[:]))-4)
	_, err = io.ReadFull(conn, rest)
	must(t, err, "reading the ApiVersions response")

	// A failing acks=0 produce: the connection closes, nothing is answered.
	send(4, testsupport.ProduceRequest(topic, 7, 0, 5000, batch))
	n, err := conn.Read(head[:])
	if n != 0 || !(errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed) || isReset(err)) {
		t.Fatalf("after a failed acks=0 produce: read %d bytes, %v; want the connection closed", n, err)
	}

	ctx := ctxTimeout(t, 10*time.Second)
	ends, err := adm.ListEndOffsets(ctx, topic)
	must(t, err, "ListOffsets")
	if o, _ := ends.Lookup(topic, 0); o.Offset != 4 {
		t.Fatalf("end offset %d after two acks=0 produces of two records, want 4", o.Offset)
	}
}

func isReset(err error) bool {
	var ne *net.OpError
	return errors.As(err, &ne) && !ne.Timeout()
}
