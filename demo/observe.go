package demo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/record"
)

// partitionState is what Metadata says of a partition.
type partitionState struct {
	leader   int32 // -1: offline
	epoch    int32 // leader epoch
	replicas []int32
	isr      []int32 // sorted
}

func (s partitionState) String() string {
	leader := fmt.Sprintf("leader %d", s.leader)
	if s.leader < 0 {
		leader = "no leader (offline)"
	}
	return fmt.Sprintf("%s, ISR %v, leader epoch %d", leader, s.isr, s.epoch)
}

func (s partitionState) equal(o partitionState) bool {
	return s.leader == o.leader && s.epoch == o.epoch && slices.Equal(s.isr, o.isr)
}

// request sends req to node n itself (not to any broker its client has
// learned of), within a few seconds.
func (c *cluster) request(ctx context.Context, n *node, req kmsg.Request) (kmsg.Response, error) {
	cl, err := c.nodeClient(n)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	return cl.SeedBrokers()[0].Request(ctx, req)
}

// nodeClient is a client whose only seed is node n, kept for the cluster's
// life.
func (c *cluster) nodeClient(n *node) (*kgo.Client, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if cl, ok := c.clients[n.id]; ok {
		return cl, nil
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(n.clientAddr))
	if err != nil {
		return nil, err
	}
	if c.clients == nil {
		c.clients = map[int32]*kgo.Client{}
	}
	c.clients[n.id] = cl
	return cl, nil
}

func (c *cluster) closeClients() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, cl := range c.clients {
		cl.Close()
	}
	c.clients = nil
}

// describe returns partition 0 of topic as the first broker that knows it
// and has been serving for a second sees it. A broker that just resumed
// or restarted answers from its old metadata image until it has caught up
// with the controller (a heartbeat or two).
func (c *cluster) describe(ctx context.Context, topic string) (partitionState, error) {
	err := errors.New("no broker has been serving for a second")
	for _, n := range c.nodes {
		if n.ServingFor() < time.Second {
			continue
		}
		var st partitionState
		if st, err = c.describeOn(ctx, n, topic); err == nil {
			return st, nil
		}
	}
	return partitionState{}, err
}

func (c *cluster) describeOn(ctx context.Context, n *node, topic string) (partitionState, error) {
	req := kmsg.NewPtrMetadataRequest()
	req.Topics = []kmsg.MetadataRequestTopic{{Topic: kmsg.StringPtr(topic)}}
	resp, err := c.request(ctx, n, req)
	if err != nil {
		return partitionState{}, fmt.Errorf("metadata from node %d: %w", n.id, err)
	}
	md := resp.(*kmsg.MetadataResponse)
	if len(md.Topics) != 1 || len(md.Topics[0].Partitions) == 0 {
		return partitionState{}, fmt.Errorf("node %d does not know topic %s yet", n.id, topic)
	}
	t := md.Topics[0]
	if err := kerr.ErrorForCode(t.ErrorCode); err != nil && !errors.Is(err, kerr.LeaderNotAvailable) {
		return partitionState{}, fmt.Errorf("metadata from node %d: %w", n.id, err)
	}
	p := t.Partitions[0]
	isr := slices.Clone(p.ISR)
	slices.Sort(isr)
	return partitionState{leader: p.Leader, epoch: p.LeaderEpoch, replicas: p.Replicas, isr: isr}, nil
}

// highWatermark asks the leader for the partition's latest offset: its
// high watermark, the end of what consumers may read.
func (c *cluster) highWatermark(ctx context.Context, topic string, leader int32) (int64, error) {
	req := kmsg.NewPtrListOffsetsRequest()
	req.ReplicaID = -1
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewListOffsetsRequestTopicPartition()
	rp.Partition, rp.Timestamp = 0, -1 // latest
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := c.request(ctx, c.node(leader), req)
	if err != nil {
		return 0, err
	}
	lr := resp.(*kmsg.ListOffsetsResponse)
	if len(lr.Topics) != 1 || len(lr.Topics[0].Partitions) != 1 {
		return 0, errors.New("malformed ListOffsets response")
	}
	p := lr.Topics[0].Partitions[0]
	if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
		return 0, err
	}
	return p.Offset, nil
}

// logEndOffset is the offset after the last whole batch in the partition's
// log on node n's disk (0 if the node has no log for it).
func (n *node) logEndOffset(topic string, partition int32) (int64, error) {
	return logEndOffset(n.partitionDir(topic, partition))
}

// logEndOffset reads dir's segments: the base offset of the last one from
// its name (%020d.log), then the headers of its batches. Segments are
// preallocated, so a run of zeros (no magic byte 2) ends the log.
func logEndOffset(dir string) (int64, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.log"))
	if err != nil || len(files) == 0 {
		return 0, err
	}
	sort.Strings(files)
	last := files[len(files)-1]
	var end int64
	if _, err := fmt.Sscanf(filepath.Base(last), "%020d.log", &end); err != nil {
		return 0, fmt.Errorf("segment name %s: %w", last, err)
	}
	f, err := os.Open(last)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	var hdr [record.BatchHeaderSize]byte
	for pos := int64(0); ; {
		if _, err := f.ReadAt(hdr[:], pos); err != nil {
			if errors.Is(err, io.EOF) {
				return end, nil
			}
			return 0, err
		}
		h, _ := record.ParseBatchHeader(hdr[:])
		if h.Magic != record.Magic || h.Size() < record.BatchHeaderSize {
			return end, nil
		}
		end = h.NextOffset()
		pos += int64(h.Size())
	}
}

// offsets describes the partition's high watermark and each replica's log
// end offset: "HW 10; log end offsets: node 1 60 (leader), node 2 10 (paused), node 3 10".
func (c *cluster) offsets(ctx context.Context, topic string, st partitionState) string {
	var b strings.Builder
	if st.leader >= 0 && c.node(st.leader).Serving() {
		if hw, err := c.highWatermark(ctx, topic, st.leader); err == nil {
			fmt.Fprintf(&b, "HW %d; ", hw)
		}
	}
	b.WriteString("log end offsets:")
	for i, n := range c.nodes {
		leo, err := n.logEndOffset(topic, 0)
		if i > 0 {
			b.WriteString(",")
		}
		if err != nil {
			fmt.Fprintf(&b, " node %d ? (%v)", n.id, err)
			continue
		}
		fmt.Fprintf(&b, " node %d %d", n.id, leo)
		var notes []string
		if n.id == st.leader {
			notes = append(notes, "leader")
		}
		if s := n.state(); s != "up" {
			notes = append(notes, s)
		}
		if len(notes) > 0 {
			fmt.Fprintf(&b, " (%s)", strings.Join(notes, ", "))
		}
	}
	return b.String()
}
