package replication

import (
	"context"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"log/slog"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/internal/testsupport"
	"github.com/kbroker/kbroker/record"
	"github.com/kbroker/kbroker/storage"
)

// The replication simulator (in the style of etcd raft's rafttest): N
// replicas of one partition, each a real Partition on an in-memory log with
// a real fetcher, and simCtl deciding elections and ISR changes, all on one
// goroutine and one simulated clock. Every message between brokers (fetch
// requests and responses, AlterPartition and its answer) sits in the
// network until a step delivers or drops it; metadata reaches each broker
// in order, one version per step. sim_schedule_test.go chooses the steps,
// sim_invariants_test.go checks Kafka's rules after each.

// simConfig is one simulation.
type simConfig struct {
	Seed     uint64
	Replicas []int32 // assignment order: the preferred leader first
	MinISR   int32
	Unclean  bool // unclean.leader.election.enable
	Steps    int  // random steps before the final heal
	// SegmentBytes rolls (and so flushes) segments; small, so that some
	// data is durable and some is not.
	SegmentBytes int64
	LagMax       time.Duration // replica.lag.time.max.ms
	// NoMemberEpochs: followers fetch with broker epoch -1 (unknown, as a
	// broker without KIP-903 would), so the leader's AlterPartition names
	// none and the controller cannot tell incarnations apart.
	NoMemberEpochs bool
}

const simCtlID = int32(0) // the controller's end of a link

var bgContext = context.Background()

// simLeaderClient is a fetcher's connection in the simulator. Fetches travel
// as messages (the simulator runs a fetcher's rounds itself); ListOffsets,
// which the fetcher sends while it handles a response, is answered at once
// if the leader is reachable.
type simLeaderClient struct {
	c        *simCluster
	from, to int32
}

func (l *simLeaderClient) Fetch(context.Context, *kmsg.FetchRequest) (*kmsg.FetchResponse, error) {
	panic("simulated fetches travel as messages")
}

func (l *simLeaderClient) ListOffsets(_ context.Context, req *kmsg.ListOffsetsRequest) (*kmsg.ListOffsetsResponse, error) {
	leader := l.c.broker(l.to)
	if !leader.alive || !l.c.broker(l.from).alive || l.c.isCut(l.from, l.to) {
		l.c.note("ListOffsets b%d->b%d lost", l.from, l.to)
		return nil, errUnreachable
	}
	resp := listOffsetsOverWire(leader.part, req)
	l.c.note("ListOffsets b%d->b%d: offset %d err %d", l.from, l.to, resp.Topics[0].Partitions[0].Offset, resp.Topics[0].Partitions[0].ErrorCode)
	return resp, nil
}

func (l *simLeaderClient) Close() {}

// simCluster is the simulated world.
type simCluster struct {
	cfg     simConfig
	rng     *rand.Rand
	clock   *fakeClock
	brokers []*simBroker // by id-1
	ctl     *simCtl
	logger  *slog.Logger

	nextMsg  int
	inflight []*simMsg
	cuts     [][2]int32 // cut links, ordered pairs (low, high)

	seq     int64 // produce sequence: each batch's records carry it
	pending []pendingProduce
	acked   []ackedBatch
	// committed is the highest HW seen: the committed log's end.
	committed int64
	// deletedBelow is the highest log start DeleteRecords set: acknowledged
	// data below it is gone on purpose.
	deletedBelow int64
	// unsafe is set once Kafka allows data loss (trackCommitted): from
	// then on only liveness is checked.
	unsafe bool

	truncations, crashes int // what the schedule exercised
	nsteps               int // steps taken

	choices   simChoices  // the scheduler's buffer
	agreement []simAgreed // checkAgreement's progress, by pair of brokers
	// ackedKey and ackedChecked are checkAcked's progress.
	ackedKey     simAckedKey
	ackedChecked int

	// recording keeps the schedule (steps). Bulk runs leave it off and
	// replay a failing seed with it on: the runs are the same.
	recording bool
	steps     []simLine // the schedule so far, as executed
	err       error     // the first invariant violated
}

// simBroker is one broker's replica and fetcher.
type simBroker struct {
	id          int32
	alive       bool
	incarnation int
	brokerEpoch int64
	log         *memLog
	part        *Partition
	fetcher     *fetcher
	fetchLeader int32
	fetching    bool      // a round is in flight
	readyAt     time.Time // the fetcher's next round not before
	applied     int       // metadata versions applied
	slow        bool
	lastHW      int64 // for "the HW never moves back" within this incarnation
}

type simMsgKind int8

const (
	msgFetch simMsgKind = iota
	msgFetchResponse
	msgAlter
	msgAlterResponse
)

func (k simMsgKind) String() string {
	return [...]string{"fetch", "fetch-response", "alter-partition", "alter-partition-response"}[k]
}

// simMsg is a message in flight. A broker end is only reached in the
// incarnation it was sent to or from.
type simMsg struct {
	id       int
	kind     simMsgKind
	from, to int32
	fromInc  int
	toInc    int
	f        *fetcher // the fetcher (connection) a fetch belongs to
	round    fetchRound
	resp     *kmsg.FetchResponse
	epoch    int64 // the sender's broker epoch (AlterPartition)
	change   AlterISR
	result   simAlterResult
}

func (m *simMsg) String() string {
	s := fmt.Sprintf("#%d %s %s->%s", m.id, m.kind, endName(m.from), endName(m.to))
	switch m.kind {
	case msgFetch:
		if rp := m.round.req.Topics; len(rp) > 0 {
			p := rp[0].Partitions[0]
			s += fmt.Sprintf(" (offset %d, last epoch %d, epoch %d)", p.FetchOffset, p.LastFetchedEpoch, p.CurrentLeaderEpoch)
		}
	case msgFetchResponse:
		if len(m.resp.Topics) > 0 {
			p := m.resp.Topics[0].Partitions[0]
			s += fmt.Sprintf(" (err %d, hw %d, diverging %d@%d, %d bytes)", p.ErrorCode, p.HighWatermark,
				p.DivergingEpoch.Epoch, p.DivergingEpoch.EndOffset, len(p.RecordBatches))
		}
	case msgAlter:
		s += fmt.Sprintf(" (isr %v, leader epoch %d, partition epoch %d)", m.change.NewISR, m.change.LeaderEpoch, m.change.PartitionEpoch)
	case msgAlterResponse:
		s += fmt.Sprintf(" (isr %v, err %v)", m.result.isr, m.result.err)
	}
	return s
}

func endName(id int32) string {
	if id == simCtlID {
		return "ctl"
	}
	return fmt.Sprintf("b%d", id)
}

// pendingProduce is an acks=all produce waiting for the HW.
type pendingProduce struct {
	broker      int32
	incarnation int
	part        *Partition
	batch       ackedBatch
}

// ackedBatch is a batch as the leader stamped it.
type ackedBatch struct {
	seq   int64
	batch memBatch
	// exempt: every ISR member lost it in crashes (no promise is left).
	exempt bool
}

func newSimCluster(cfg simConfig) *simCluster {
	c := &simCluster{cfg: cfg, recording: true, rng: rand.New(rand.NewPCG(cfg.Seed, cfg.Seed^0x9e3779b97f4a7c15)),
		clock: testsupport.NewClock(time.Unix(1_000_000, 0)), logger: slog.New(slog.DiscardHandler)}
	ids := slices.Clone(cfg.Replicas)
	slices.Sort(ids)
	for _, id := range ids {
		b := &simBroker{id: id, alive: true, brokerEpoch: 1,
			log: newMemLog(memLogConfig{SegmentBytes: cfg.SegmentBytes})}
		b.log.single = true
		b.part = c.newPartition(b)
		c.brokers = append(c.brokers, b)
	}
	c.ctl = newSimCtl(cfg.Replicas, cfg.Unclean)
	for _, b := range c.brokers {
		c.applyMeta(b)
	}
	return c
}

func (c *simCluster) broker(id int32) *simBroker { return c.brokers[id-1] }

func (c *simCluster) newPartition(b *simBroker) *Partition {
	return NewPartition("t", 0, b.log, PartitionOptions{LocalID: b.id, Now: c.clock.Now, Logger: c.logger,
		ProposeISR: func(_ *Partition, ch AlterISR) {
			c.send(&simMsg{kind: msgAlter, from: b.id, to: simCtlID, fromInc: b.incarnation, epoch: b.brokerEpoch, change: ch})
		}})
}

// simLine is a step of the schedule, formatted only for a report (the
// arguments are values that no later step changes).
type simLine struct {
	format string
	args   []any
	notes  []simLine // what happened, appended by note
}

func (l simLine) String() string {
	s := fmt.Sprintf(l.format, l.args...)
	for _, n := range l.notes {
		s += " — " + n.String()
	}
	return s
}

// record appends a step to the schedule.
func (c *simCluster) record(format string, args ...any) {
	c.nsteps++
	if c.recording {
		c.steps = append(c.steps, simLine{format: format, args: args})
	}
}

// note adds what happened to the last step.
func (c *simCluster) note(format string, args ...any) {
	if !c.recording || len(c.steps) == 0 {
		return
	}
	last := &c.steps[len(c.steps)-1]
	last.notes = append(last.notes, simLine{format: format, args: args})
}

// --- the network

func linkOf(a, b int32) [2]int32 { return [2]int32{min(a, b), max(a, b)} }

func (c *simCluster) isCut(a, b int32) bool { return slices.Contains(c.cuts, linkOf(a, b)) }

// reachable: both ends up (in the incarnations of the message) and the
// link whole.
func (c *simCluster) reachable(m *simMsg) bool {
	up := func(id int32, inc int) bool {
		return id == simCtlID || (c.broker(id).alive && c.broker(id).incarnation == inc)
	}
	return up(m.from, m.fromInc) && up(m.to, m.toInc) && !c.isCut(m.from, m.to)
}

func (c *simCluster) send(m *simMsg) {
	c.nextMsg++
	m.id = c.nextMsg
	if m.to != simCtlID {
		m.toInc = c.broker(m.to).incarnation
	}
	c.inflight = append(c.inflight, m)
}

func (c *simCluster) takeMsg(id int) *simMsg {
	for i, m := range c.inflight {
		if m.id == id {
			c.inflight = slices.Delete(c.inflight, i, i+1)
			return m
		}
	}
	return nil
}

// deliver hands a message to its receiver.
func (c *simCluster) deliver(m *simMsg) {
	if !c.reachable(m) {
		c.lose(m)
		c.note("lost")
		return
	}
	switch m.kind {
	case msgFetch:
		leader := c.broker(m.to)
		resp := fetchOverWire(leader.part, m.round.req)
		c.send(&simMsg{kind: msgFetchResponse, from: m.to, to: m.from, fromInc: m.toInc, f: m.f, round: m.round, resp: resp})
	case msgFetchResponse:
		b := c.broker(m.to)
		if b.fetcher != m.f {
			return // the connection of a fetcher since stopped
		}
		if p := m.resp.Topics[0].Partitions[0]; p.DivergingEpoch.EndOffset >= 0 {
			c.truncations++
		}
		b.fetching = false
		b.readyAt = c.clock.Now().Add(m.f.complete(m.round, m.resp, nil))
	case msgAlter:
		res := c.alterOverWire(m)
		c.send(&simMsg{kind: msgAlterResponse, from: simCtlID, to: m.from, change: m.change, result: res})
	case msgAlterResponse:
		b := c.broker(m.to)
		if b.part.ISRResult(m.change, m.result.isr, m.result.leaderEpoch, m.result.partitionEpoch, m.result.err) {
			c.resendAlter(b, m.change)
		}
	}
}

// alterOverWire is an AlterPartition as the leader's manager sends it (one
// change): built by AlterPartitionRequest, over the wire to the
// controller, whose answer comes back over the wire and is read by
// AlterPartitionResults.
func (c *simCluster) alterOverWire(m *simMsg) simAlterResult {
	changes := []AlterISR{m.change}
	req := requestOverWire(AlterPartitionRequest(m.from, m.epoch, changes))
	resp := responseOverWire(c.ctl.alterPartition(req))
	results, err := AlterPartitionResults(changes, resp)
	if err != nil {
		return simAlterResult{err: err}
	}
	r := results[0]
	return simAlterResult{isr: r.ISR, leaderEpoch: r.LeaderEpoch, partitionEpoch: r.PartitionEpoch, err: r.Err}
}

// lose drops a message: its sender sees the request time out.
func (c *simCluster) lose(m *simMsg) {
	follower, leader := m.from, m.from
	inc := m.fromInc
	if m.kind == msgFetchResponse || m.kind == msgAlterResponse {
		follower, leader, inc = m.to, m.to, m.toInc
	}
	switch m.kind {
	case msgFetch, msgFetchResponse:
		b := c.broker(follower)
		if b.alive && b.incarnation == inc && b.fetcher == m.f {
			b.fetching = false
			b.readyAt = c.clock.Now().Add(m.f.complete(m.round, nil, errUnreachable))
		}
	case msgAlter, msgAlterResponse:
		b := c.broker(leader)
		if b.alive && b.incarnation == inc && b.part.ISRResult(m.change, nil, 0, 0, errUnreachable) {
			c.resendAlter(b, m.change)
		}
	}
}

// resendAlter sends a change whose answer was lost again, as the manager
// does after its retry backoff.
func (c *simCluster) resendAlter(b *simBroker, ch AlterISR) {
	m := &simMsg{kind: msgAlter, from: b.id, to: simCtlID, fromInc: b.incarnation, epoch: b.brokerEpoch, change: ch}
	c.send(m)
	c.note("sent again as #%d", m.id)
}

// --- brokers

// applyMeta applies the next metadata version to b, as the broker's image
// applier and Manager do (broker/metadata.go applyPartition).
func (c *simCluster) applyMeta(b *simBroker) {
	st := c.ctl.meta[b.applied]
	b.applied++
	c.applyState(b, st)
}

func (c *simCluster) applyState(b *simBroker, st PartitionState) {
	if st.Leader == b.id {
		c.stopFetcher(b)
		if err := b.part.MakeLeader(st, c.cfg.MinISR); err != nil {
			c.note("MakeLeader: %v", err)
		}
		return
	}
	changed, err := b.part.MakeFollower(st)
	if err != nil {
		c.note("MakeFollower: %v", err)
	}
	if err != nil || !changed {
		return
	}
	c.stopFetcher(b)
	if st.Leader >= 0 {
		c.startFetcher(b, st.Leader)
	}
}

func (c *simCluster) startFetcher(b *simBroker, leader int32) {
	client := &simLeaderClient{c: c, from: b.id, to: leader}
	opts := FetcherOptions{Backoff: time.Second, MaxWait: 500 * time.Millisecond,
		BrokerEpoch: func() int64 { return b.brokerEpoch }}
	if c.cfg.NoMemberEpochs {
		opts.BrokerEpoch = nil
	}
	b.fetcher = newFetcher(fetcherConfig{parent: bgContext, leader: leader, localID: b.id, opts: opts, client: client,
		now: c.clock.Now, logger: c.logger, retire: func(*fetcher) bool { return true }})
	b.fetcher.add(b.part)
	b.fetchLeader, b.fetching, b.readyAt = leader, false, c.clock.Now()
}

func (c *simCluster) stopFetcher(b *simBroker) {
	if b.fetcher != nil {
		b.fetcher.cancel()
	}
	b.fetcher, b.fetching = nil, false
}

func (c *simCluster) crash(b *simBroker) {
	c.crashes++
	b.alive = false
	c.stopFetcher(b)
	if err := b.log.crash(); err != nil {
		c.fail("crash of b%d: %v", b.id, err)
	}
	b.part = nil
}

// restart brings b back as a new incarnation: it registers (leaving the
// ISR), then applies the latest metadata.
func (c *simCluster) restart(b *simBroker) {
	b.alive = true
	b.incarnation++
	b.part = c.newPartition(b)
	b.lastHW = b.log.HighWatermark()
	b.brokerEpoch = c.ctl.register(b.id)
	b.applied = len(c.ctl.meta) - 1
	c.applyMeta(b)
}

// roleEpoch reads the replica's role and leader epoch in one lock pass.
func (b *simBroker) roleEpoch() (Role, int32) {
	b.part.mu.RLock()
	defer b.part.mu.RUnlock()
	return b.part.role, b.part.leaderEpoch
}

// leads reports whether b is the established leader: the controller's
// choice, alive, and leading the controller's epoch.
func (c *simCluster) leads(b *simBroker) bool {
	if !b.alive || c.ctl.leader != b.id {
		return false
	}
	role, epoch := b.roleEpoch()
	return role == RoleLeader && epoch == c.ctl.leaderEpoch
}

func (c *simCluster) leaderBroker() *simBroker {
	if c.ctl.leader < 0 {
		return nil
	}
	if b := c.broker(c.ctl.leader); c.leads(b) {
		return b
	}
	return nil
}

// produce appends n records to b as a producer would, with acks.
func (c *simCluster) produce(b *simBroker, acks int16, n int) {
	c.seq++
	data := simBatch(c.seq, n, c.clock.Now())
	parsed, err := record.ParseProduce(data)
	if err != nil {
		panic(err)
	}
	info, err := b.part.AppendAsLeader([]record.Batch{parsed}, acks, storage.AppendOptions{})
	if err != nil {
		c.note("%v", err)
		return
	}
	h := parsed.Header()
	batch := ackedBatch{seq: c.seq, batch: memBatch{base: info.FirstOffset, last: info.LastOffset,
		epoch: h.PartitionLeaderEpoch, crc: h.CRC, data: data}}
	c.note("offsets %d-%d epoch %d", info.FirstOffset, info.LastOffset, h.PartitionLeaderEpoch)
	if acks == -1 {
		c.pending = append(c.pending, pendingProduce{broker: b.id, incarnation: b.incarnation, part: b.part, batch: batch})
	}
}

// resolveProduces answers the acks=all produces whose wait is over, as
// WaitForHW would (its waiter is woken on every HW move and role change, so
// it sees each step's state).
func (c *simCluster) resolveProduces() {
	kept := c.pending[:0]
	for _, p := range c.pending {
		b := c.broker(p.broker)
		if !b.alive || b.incarnation != p.incarnation {
			continue // the producer got no answer
		}
		done, err := p.part.hwReached(p.batch.batch.last)
		switch {
		case !done:
			kept = append(kept, p)
		case err == nil:
			c.acked = append(c.acked, p.batch)
		}
	}
	c.pending = kept
}

// simBatch is a batch of n records whose values carry seq, so that every
// produced batch differs from every other.
func simBatch(seq int64, n int, now time.Time) []byte {
	var records []byte
	for i := range n {
		var rec []byte
		rec = append(rec, 0)                   // attributes
		rec = kbin.AppendVarlong(rec, 0)       // timestamp delta
		rec = kbin.AppendVarint(rec, int32(i)) // offset delta
		rec = kbin.AppendVarint(rec, -1)       // null key
		rec = kbin.AppendVarint(rec, 8)        // value length
		rec = binary.BigEndian.AppendUint64(rec, uint64(seq))
		rec = kbin.AppendVarint(rec, 0) // no headers
		records = kbin.AppendVarint(records, int32(len(rec)))
		records = append(records, rec...)
	}
	b := make([]byte, 61, 61+len(records))
	ts := uint64(now.UnixMilli())
	binary.BigEndian.PutUint32(b[8:], uint32(49+len(records)))
	b[16] = 2
	binary.BigEndian.PutUint32(b[23:], uint32(n-1))
	binary.BigEndian.PutUint64(b[27:], ts)
	binary.BigEndian.PutUint64(b[35:], ts)
	binary.BigEndian.PutUint64(b[43:], ^uint64(0)) // producer id -1
	binary.BigEndian.PutUint16(b[51:], 0xFFFF)
	binary.BigEndian.PutUint32(b[53:], 0xFFFFFFFF)
	binary.BigEndian.PutUint32(b[57:], uint32(n))
	b = append(b, records...)
	binary.BigEndian.PutUint32(b[17:], crc32.Checksum(b[21:], crc32.MakeTable(crc32.Castagnoli)))
	return b
}

// --- reporting

func (c *simCluster) fail(format string, args ...any) {
	if c.err == nil {
		c.err = fmt.Errorf(format, args...)
	}
}

// report is the failure: the seed, the broken rule, the schedule and the
// final state.
func (c *simCluster) report() string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "seed %d (replicas %v, min ISR %d, unclean %v): %v\n", c.cfg.Seed, c.cfg.Replicas, c.cfg.MinISR, c.cfg.Unclean, c.err)
	fmt.Fprintf(&sb, "replay: go test -run 'TestSimulator' ./replication/ -sim.seed=%d -sim.steps=%d\nschedule:\n", c.cfg.Seed, c.cfg.Steps)
	for i, s := range c.steps {
		fmt.Fprintf(&sb, "  %4d. %s\n", i+1, s)
	}
	sb.WriteString(c.describe())
	return sb.String()
}

func (c *simCluster) describe() string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "controller: leader %d, leader epoch %d, partition epoch %d, ISR %v, unclean epochs %v\n",
		c.ctl.leader, c.ctl.leaderEpoch, c.ctl.partitionEpoch, c.ctl.isr, c.ctl.uncleanEpochs)
	for _, b := range c.brokers {
		if !b.alive {
			fmt.Fprintf(&sb, "b%d: down; log end %d, HW %d, epochs %v\n", b.id, b.log.LogEndOffset(), b.log.HighWatermark(), b.log.EpochCache().Entries())
			continue
		}
		s := b.part.Snapshot()
		fmt.Fprintf(&sb, "b%d: %s of %d at epoch %d, ISR %v, LEO %d, HW %d, epochs %v, metadata %d/%d\n", b.id, s.Role, s.Leader,
			s.LeaderEpoch, s.MaximalISR, s.LogEndOffset, s.HighWatermark, b.log.EpochCache().Entries(), b.applied, len(c.ctl.meta))
	}
	if len(c.cuts) > 0 {
		fmt.Fprintf(&sb, "cut links: %v\n", c.cuts)
	}
	return sb.String()
}
