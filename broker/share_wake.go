package broker

import (
	"sync"

	"github.com/kbroker/kbroker/broker/sharepartition"
	"github.com/kbroker/kbroker/replication"
)

// shareWakers wakes the ShareFetch long polls waiting on a share-partition
// when records of it became acquirable again without the log moving: a
// release, a lock timeout, a rolled back acknowledgement
// (sharepartition.Options.OnAvailable). Appends and high watermark moves
// wake them through the partition's own watchers.
type shareWakers struct {
	mu  sync.Mutex // guards set
	set map[shareWakeKey]map[*replication.Waiter]struct{}
}

// shareWakeKey is a share-partition without its topic name.
type shareWakeKey struct {
	group     string
	topicID   [16]byte
	partition int32
}

func wakeKeyOf(k sharepartition.Key) shareWakeKey {
	return shareWakeKey{k.Group, k.TopicID, k.Partition}
}

func newShareWakers() *shareWakers {
	return &shareWakers{set: map[shareWakeKey]map[*replication.Waiter]struct{}{}}
}

func (ws *shareWakers) add(keys []sharepartition.Key, w *replication.Waiter) {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	for _, k := range keys {
		wk := wakeKeyOf(k)
		if ws.set[wk] == nil {
			ws.set[wk] = map[*replication.Waiter]struct{}{}
		}
		ws.set[wk][w] = struct{}{}
	}
}

func (ws *shareWakers) remove(keys []sharepartition.Key, w *replication.Waiter) {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	for _, k := range keys {
		wk := wakeKeyOf(k)
		delete(ws.set[wk], w)
		if len(ws.set[wk]) == 0 {
			delete(ws.set, wk)
		}
	}
}

// notify wakes the waiters of k without blocking.
func (ws *shareWakers) notify(k sharepartition.Key) {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	for w := range ws.set[wakeKeyOf(k)] {
		select {
		case w.C <- struct{}{}:
		default:
		}
	}
}
