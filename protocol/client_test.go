package protocol

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func produceAcks1() *kmsg.ProduceRequest {
	req := kmsg.NewPtrProduceRequest()
	req.SetVersion(9)
	req.Acks = 1
	return req
}

// A client sending every request with one context (a replica fetcher)
// registers for its end once per connection, not once per request; the
// end still fails the round trip in progress, and a request after it.
func TestClientWatchesContextOncePerConnection(t *testing.T) {
	_, addr, h := startServer(t, ServerOptions{})
	cl := NewClient(addr, "test")
	defer cl.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for range 10 {
		if _, err := cl.Request(ctx, produceAcks1()); err != nil {
			t.Fatal(err)
		}
	}
	if cl.watches != 1 {
		t.Fatalf("%d context registrations for 10 requests with one context, want 1", cl.watches)
	}
	// Another context replaces the watch; the first one's end then does
	// not touch the connection.
	other, cancelOther := context.WithCancel(context.Background())
	if _, err := cl.Request(other, produceAcks1()); err != nil {
		t.Fatal(err)
	}
	cancel()
	if _, err := cl.Request(other, produceAcks1()); err != nil {
		t.Fatalf("request after an earlier context ended: %v", err)
	}
	// The watched context ends between requests: the next one fails at once.
	cancelOther()
	if _, err := cl.Request(other, produceAcks1()); !errors.Is(err, context.Canceled) {
		t.Fatalf("request with an ended context: %v, want context.Canceled", err)
	}

	// It ends while a request waits for its answer (Metadata of a topic
	// named with 20,000 characters is answered after 20 s): the request
	// fails then, not after the answer.
	ctx3, cancel3 := context.WithCancel(context.Background())
	if _, err := cl.Request(ctx3, produceAcks1()); err != nil {
		t.Fatal(err)
	}
	handled := h.handled.Load()
	done := make(chan error, 1)
	go func() {
		_, err := cl.Request(ctx3, metadataFor(strings.Repeat("x", 20000)))
		done <- err
	}()
	for deadline := time.Now().Add(10 * time.Second); h.handled.Load() == handled; {
		if time.Now().After(deadline) {
			t.Fatal("the server never got the request")
		}
		time.Sleep(time.Millisecond)
	}
	cancel3()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("a request whose context ended succeeded")
		}
	case <-time.After(15 * time.Second):
		t.Fatal("the context's end did not fail the request in progress (its answer comes after 20 s)")
	}
}
