package main

// Waiting on many partitions: every broker is asked for its own Metadata
// (raw connections, redialled when a broker restarts), what it says is
// counted, and the wait ends when every broker says the condition holds, at
// a deadline, or when the count has not grown for a stall period. A cluster
// that cannot open its partitions (the open-file limit) stops growing long
// before any deadline, and the harness says so instead of waiting it out.

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// metaPoller asks each broker, over its own connection, for Metadata of
// every topic.
type metaPoller struct {
	addrs []string
	conns []*rawConn
}

func newMetaPoller(addrs []string) *metaPoller {
	return &metaPoller{addrs: addrs, conns: make([]*rawConn, len(addrs))}
}

func (p *metaPoller) Close() {
	for i := range p.conns {
		p.drop(i)
	}
}

// drop closes broker i's connection, if any; the next request dials again.
func (p *metaPoller) drop(i int) {
	if p.conns[i] != nil {
		p.conns[i].Close()
		p.conns[i] = nil
	}
}

// conn is broker i's connection, dialled when there is none.
func (p *metaPoller) conn(ctx context.Context, i int) (*rawConn, error) {
	if p.conns[i] != nil {
		return p.conns[i], nil
	}
	c, err := dialRaw(ctx, p.addrs[i])
	if err != nil {
		return nil, err
	}
	p.conns[i] = c
	return c, nil
}

// raw sends one all-topics Metadata request to broker i, within d, and
// returns the response body as read from the socket. A failed connection is
// dropped, to be dialled again next time.
func (p *metaPoller) raw(ctx context.Context, i int, d time.Duration) ([]byte, *kmsg.MetadataRequest, error) {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	c, err := p.conn(ctx, i)
	if err != nil {
		return nil, nil, err
	}
	req, err := allTopicsRequest(c)
	if err != nil {
		return nil, nil, err
	}
	body, err := c.roundTrip(ctx, req)
	if err != nil {
		p.drop(i)
	}
	return body, req, err
}

// metadata is broker i's decoded all-topics Metadata.
func (p *metaPoller) metadata(ctx context.Context, i int) (*kmsg.MetadataResponse, error) {
	body, req, err := p.raw(ctx, i, 30*time.Second)
	if err != nil {
		return nil, err
	}
	resp := kmsg.NewPtrMetadataResponse()
	resp.Version = req.Version
	return resp, resp.ReadFrom(body)
}

// partCount is what one broker's Metadata says of the wanted partitions.
type partCount struct {
	Want    int // partitions of the wanted topics
	Listed  int // of them, listed without an error code
	Led     int // ... with a leader
	FullISR int // ... led, with RF replicas, all in the ISR
	Offline int // listed with offline replicas
}

func (c partCount) String() string {
	return fmt.Sprintf("%d of %d partitions listed, %d led, %d led with a full ISR, %d with offline replicas",
		c.Listed, c.Want, c.Led, c.FullISR, c.Offline)
}

// countReady counts the partitions of want (topic -> partitions) in md,
// each ready when it is led and has rf replicas, all in its ISR.
func countReady(md *kmsg.MetadataResponse, want map[string]int, rf int) partCount {
	c := partCount{}
	for _, n := range want {
		c.Want += n
	}
	for _, t := range md.Topics {
		if t.Topic == nil || want[*t.Topic] == 0 || t.ErrorCode != 0 {
			continue
		}
		for _, p := range t.Partitions {
			if p.ErrorCode != 0 && p.Leader < 0 {
				continue
			}
			c.Listed++
			if len(p.OfflineReplicas) > 0 {
				c.Offline++
			}
			if p.Leader < 0 {
				continue
			}
			c.Led++
			if len(p.Replicas) == rf && len(p.ISR) >= len(p.Replicas) {
				c.FullISR++
			}
		}
	}
	return c
}

// countInSync counts, of want's partitions that node is a replica of, how
// many are led with node in their ISR.
func countInSync(md *kmsg.MetadataResponse, want map[string]int, node int32) (inSync, replicas int) {
	for _, t := range md.Topics {
		if t.Topic == nil || want[*t.Topic] == 0 {
			continue
		}
		for _, p := range t.Partitions {
			if !slices.Contains(p.Replicas, node) {
				continue
			}
			replicas++
			if p.Leader >= 0 && slices.Contains(p.ISR, node) {
				inSync++
			}
		}
	}
	return inSync, replicas
}

// progressWatch decides when a wait ends without success: at the deadline,
// or when the best progress seen has not grown for stall.
type progressWatch struct {
	start, lastGain time.Time
	best            int
	timeout, stall  time.Duration
}

func newProgressWatch(now time.Time, timeout, stall time.Duration) *progressWatch {
	return &progressWatch{start: now, lastGain: now, best: -1, timeout: timeout, stall: stall}
}

// observe records progress at now and says why the wait must end ("" to
// keep waiting).
func (w *progressWatch) observe(now time.Time, progress int) string {
	if progress > w.best {
		w.best, w.lastGain = progress, now
	}
	switch {
	case now.Sub(w.start) >= w.timeout:
		return fmt.Sprintf("not done after %v (the deadline)", w.timeout)
	case now.Sub(w.lastGain) >= w.stall:
		return fmt.Sprintf("no progress for %v (stalled after %v)", w.stall, now.Sub(w.start).Round(time.Second))
	}
	return ""
}

// pollResult is one poll of every broker: how far the condition is met
// (summed over the brokers), whether it holds on all, and what each said.
type pollResult struct {
	progress int
	done     bool
	detail   []string
	fatal    error // ends the wait at once (a broker exited)
}

// waitProgress polls until done, sleeping after each poll as long as the
// poll took (at least 100 ms), so that the polling itself costs the brokers
// at most about half of one Metadata stream. It returns the time from start
// to the poll that found it done.
func waitProgress(ctx context.Context, start time.Time, timeout, stall time.Duration, poll func() pollResult) (time.Duration, error) {
	w := newProgressWatch(start, timeout, stall)
	for {
		t0 := time.Now()
		r := poll()
		if r.done {
			return time.Since(start), nil
		}
		if r.fatal != nil {
			return 0, fmt.Errorf("%w; last poll: %s", r.fatal, strings.Join(r.detail, "; "))
		}
		if why := w.observe(time.Now(), r.progress); why != "" {
			return 0, fmt.Errorf("%s; last poll: %s", why, strings.Join(r.detail, "; "))
		}
		if ctx.Err() != nil {
			return 0, ctx.Err()
		}
		select {
		case <-time.After(max(100*time.Millisecond, time.Since(t0))):
		case <-ctx.Done():
		}
	}
}
