package main

// The null broker: the least a Kafka broker can do for franz-go, so that its
// throughput and CPU are the ceiling for this client on this machine. One
// process serves N broker ids on N listeners. It answers ApiVersions,
// Metadata, CreateTopics, DeleteTopics (closes and removes the topic's
// files), InitProducerID, Produce (stamps the base offset, appends the batch
// to one file per partition, acks at once whatever acks asks), Fetch (reads
// batches back from the file up to the log end, with a long poll woken by
// appends) and ListOffsets. It validates nothing,
// replicates nothing and forgets everything when it exits.
//
// With perReplica set (target null-rf) it also writes every batch to one more
// file per further replica of the topic, and does nothing else more: the
// page-cache writes that replication costs any broker on this machine, which
// on a VM that charges for fresh pages are most of a broker's CPU.

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// nullVersions are the API versions the null broker advertises. Fetch stops
// at v12 so that no topic ids are needed on the read path.
var nullVersions = []kmsg.ApiVersionsResponseApiKey{
	{ApiKey: 0, MinVersion: 3, MaxVersion: 12}, // Produce
	{ApiKey: 1, MinVersion: 4, MaxVersion: 12}, // Fetch
	{ApiKey: 2, MinVersion: 1, MaxVersion: 7},  // ListOffsets
	{ApiKey: 3, MinVersion: 0, MaxVersion: 12}, // Metadata
	{ApiKey: 18, MinVersion: 0, MaxVersion: 3}, // ApiVersions
	{ApiKey: 19, MinVersion: 2, MaxVersion: 7}, // CreateTopics
	{ApiKey: 20, MinVersion: 1, MaxVersion: 6}, // DeleteTopics
	{ApiKey: 22, MinVersion: 0, MaxVersion: 4}, // InitProducerID
}

type nullBroker struct {
	dir        string
	addrs      []*net.TCPAddr // index = node id
	perReplica bool           // write each batch once per replica (null-rf)

	mu     sync.Mutex // guards topics
	topics map[string]*nullTopic

	nextPID atomic.Int64
}

type nullTopic struct {
	id    [16]byte
	rf    int
	parts []*nullPartition
}

// nullPartition is one partition's log: a file of batches and their offsets.
type nullPartition struct {
	f        *os.File
	replicas []*os.File // null-rf: the further replicas' copies, written only

	mu      sync.Mutex // guards the following
	deleted bool       // its topic was deleted: its files are closed
	next    int64      // log end offset
	size    int64      // file size
	batches []nullBatch
	waiters []chan struct{}
}

type nullBatch struct {
	base, last int64
	pos        int64
	size       int32
}

// runNull serves until ctx ends. listeners are "host:port" (port 0 picks).
func runNull(ctx context.Context, dir string, perReplica bool, listeners []string, ready func([]string)) error {
	nb := &nullBroker{dir: dir, perReplica: perReplica, topics: map[string]*nullTopic{}}
	var ls []net.Listener
	for _, a := range listeners {
		l, err := net.Listen("tcp", a)
		if err != nil {
			return err
		}
		ls = append(ls, l)
		nb.addrs = append(nb.addrs, l.Addr().(*net.TCPAddr))
	}
	var out []string
	for _, a := range nb.addrs {
		out = append(out, a.String())
	}
	ready(out)
	var wg sync.WaitGroup
	for _, l := range ls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				c, err := l.Accept()
				if err != nil {
					return
				}
				go nb.serve(ctx, c)
			}
		}()
	}
	<-ctx.Done()
	for _, l := range ls {
		l.Close()
	}
	wg.Wait()
	return nil
}

func (nb *nullBroker) serve(ctx context.Context, c net.Conn) {
	defer c.Close()
	stop := context.AfterFunc(ctx, func() { c.Close() })
	defer stop()
	rd := bufio.NewReaderSize(c, 256<<10)
	wr := bufio.NewWriterSize(c, 256<<10)
	var size [4]byte
	var out []byte
	for {
		if _, err := io.ReadFull(rd, size[:]); err != nil {
			return
		}
		frame := make([]byte, binary.BigEndian.Uint32(size[:]))
		if _, err := io.ReadFull(rd, frame); err != nil {
			return
		}
		corr, resp, err := nb.handle(ctx, frame)
		if err != nil {
			log.Printf("null broker: %v", err)
			return
		}
		if resp == nil {
			continue // acks=0
		}
		out = appendNullResponse(out[:0], corr, resp)
		if _, err := wr.Write(out); err != nil {
			return
		}
		if rd.Buffered() == 0 {
			if err := wr.Flush(); err != nil {
				return
			}
		}
	}
}

func appendNullResponse(dst []byte, corr int32, resp kmsg.Response) []byte {
	dst = append(dst, 0, 0, 0, 0)
	dst = kbin.AppendInt32(dst, corr)
	if resp.IsFlexible() && resp.Key() != 18 {
		dst = append(dst, 0)
	}
	dst = resp.AppendTo(dst)
	binary.BigEndian.PutUint32(dst, uint32(len(dst)-4))
	return dst
}

// handle decodes one request and answers it; a nil response means none.
func (nb *nullBroker) handle(ctx context.Context, frame []byte) (int32, kmsg.Response, error) {
	rd := kbin.Reader{Src: frame}
	key, version, corr := rd.Int16(), rd.Int16(), rd.Int32()
	rd.NullableString()
	req := kmsg.RequestForKey(key)
	if req == nil || !rd.Ok() {
		return corr, nil, fmt.Errorf("bad request key %d", key)
	}
	req.SetVersion(version)
	if req.IsFlexible() {
		for n := rd.Uvarint(); n > 0 && rd.Ok(); n-- {
			rd.Uvarint()
			rd.Span(int(rd.Uvarint()))
		}
	}
	if key == 18 && version > 3 {
		resp := kmsg.NewPtrApiVersionsResponse()
		resp.ErrorCode = kerr.UnsupportedVersion.Code
		resp.ApiKeys = nullVersions
		return corr, resp, nil
	}
	if err := req.ReadFrom(rd.Src); err != nil {
		return corr, nil, fmt.Errorf("decoding key %d v%d: %w", key, version, err)
	}
	switch r := req.(type) {
	case *kmsg.ApiVersionsRequest:
		resp := r.ResponseKind().(*kmsg.ApiVersionsResponse)
		resp.ApiKeys = nullVersions
		return corr, resp, nil
	case *kmsg.MetadataRequest:
		return corr, nb.metadata(r), nil
	case *kmsg.CreateTopicsRequest:
		return corr, nb.createTopics(r), nil
	case *kmsg.DeleteTopicsRequest:
		return corr, nb.deleteTopics(r), nil
	case *kmsg.InitProducerIDRequest:
		resp := r.ResponseKind().(*kmsg.InitProducerIDResponse)
		resp.ProducerID = nb.nextPID.Add(1)
		return corr, resp, nil
	case *kmsg.ProduceRequest:
		resp, err := nb.produce(r)
		if r.Acks == 0 {
			return corr, nil, err
		}
		return corr, resp, err
	case *kmsg.FetchRequest:
		return corr, nb.fetch(ctx, r), nil
	case *kmsg.ListOffsetsRequest:
		return corr, nb.listOffsets(r), nil
	}
	return corr, nil, fmt.Errorf("unsupported key %d", key)
}

func (nb *nullBroker) topic(name string) *nullTopic {
	nb.mu.Lock()
	defer nb.mu.Unlock()
	return nb.topics[name]
}

func (nb *nullBroker) partition(topic string, p int32) *nullPartition {
	t := nb.topic(topic)
	if t == nil || p < 0 || int(p) >= len(t.parts) {
		return nil
	}
	return t.parts[p]
}

func (nb *nullBroker) metadata(r *kmsg.MetadataRequest) *kmsg.MetadataResponse {
	resp := r.ResponseKind().(*kmsg.MetadataResponse)
	resp.ClusterID = kmsg.StringPtr("null")
	resp.ControllerID = 0
	for id, a := range nb.addrs {
		b := kmsg.NewMetadataResponseBroker()
		b.NodeID, b.Host, b.Port = int32(id), a.IP.String(), int32(a.Port)
		resp.Brokers = append(resp.Brokers, b)
	}
	nb.mu.Lock()
	defer nb.mu.Unlock()
	var names []string
	if r.Topics == nil {
		for name := range nb.topics {
			names = append(names, name)
		}
		sort.Strings(names)
	}
	for _, rt := range r.Topics {
		if rt.Topic != nil {
			names = append(names, *rt.Topic)
		}
	}
	for _, name := range names {
		mt := kmsg.NewMetadataResponseTopic()
		mt.Topic = kmsg.StringPtr(name)
		t, ok := nb.topics[name]
		if !ok {
			mt.ErrorCode = kerr.UnknownTopicOrPartition.Code
			resp.Topics = append(resp.Topics, mt)
			continue
		}
		mt.TopicID = t.id
		for i := range t.parts {
			mp := kmsg.NewMetadataResponseTopicPartition()
			mp.Partition = int32(i)
			mp.Leader = int32(i % len(nb.addrs))
			for j := range t.rf {
				mp.Replicas = append(mp.Replicas, int32((i+j)%len(nb.addrs)))
			}
			mp.ISR = mp.Replicas
			mt.Partitions = append(mt.Partitions, mp)
		}
		resp.Topics = append(resp.Topics, mt)
	}
	return resp
}

func (nb *nullBroker) createTopics(r *kmsg.CreateTopicsRequest) *kmsg.CreateTopicsResponse {
	resp := r.ResponseKind().(*kmsg.CreateTopicsResponse)
	nb.mu.Lock()
	defer nb.mu.Unlock()
	for _, rt := range r.Topics {
		st := kmsg.NewCreateTopicsResponseTopic()
		st.Topic = rt.Topic
		n, rf := int(rt.NumPartitions), int(rt.ReplicationFactor)
		if n <= 0 {
			n = 1
		}
		if rf <= 0 {
			rf = 1
		}
		st.NumPartitions, st.ReplicationFactor = int32(n), int16(rf)
		switch {
		case nb.topics[rt.Topic] != nil:
			st.ErrorCode = kerr.TopicAlreadyExists.Code
		case rf > len(nb.addrs):
			st.ErrorCode = kerr.InvalidReplicationFactor.Code
		default:
			t, err := nb.newTopic(rt.Topic, n, rf)
			if err != nil {
				log.Printf("null broker: %v", err)
				st.ErrorCode = kerr.KafkaStorageError.Code
			} else if !r.ValidateOnly {
				nb.topics[rt.Topic] = t
			}
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp
}

// deleteTopics forgets the topics and removes their files, so that a topic
// created again under the same name starts empty at offset 0.
func (nb *nullBroker) deleteTopics(r *kmsg.DeleteTopicsRequest) *kmsg.DeleteTopicsResponse {
	resp := r.ResponseKind().(*kmsg.DeleteTopicsResponse)
	names := r.TopicNames
	for _, rt := range r.Topics {
		if rt.Topic != nil {
			names = append(names, *rt.Topic)
		} else if name, ok := nb.topicByID(rt.TopicID); ok {
			names = append(names, name)
		}
	}
	for _, name := range names {
		st := kmsg.NewDeleteTopicsResponseTopic()
		st.Topic = kmsg.StringPtr(name)
		nb.mu.Lock()
		t := nb.topics[name]
		delete(nb.topics, name)
		nb.mu.Unlock()
		if t == nil {
			st.ErrorCode = kerr.UnknownTopicOrPartition.Code
		} else {
			st.TopicID = t.id
			for _, p := range t.parts {
				if err := p.remove(); err != nil {
					log.Printf("null broker: deleting %s: %v", name, err)
				}
			}
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp
}

func (nb *nullBroker) topicByID(id [16]byte) (string, bool) {
	nb.mu.Lock()
	defer nb.mu.Unlock()
	for name, t := range nb.topics {
		if t.id == id {
			return name, true
		}
	}
	return "", false
}

// remove closes and deletes the partition's files and wakes its long polls.
func (p *nullPartition) remove() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.deleted = true
	var errs []error
	for _, f := range append([]*os.File{p.f}, p.replicas...) {
		errs = append(errs, f.Close(), os.Remove(f.Name()))
	}
	p.wakeLocked()
	return errors.Join(errs...)
}

func (nb *nullBroker) newTopic(name string, n, rf int) (*nullTopic, error) {
	t := &nullTopic{rf: rf}
	rand.Read(t.id[:])
	for i := range n {
		f, err := os.Create(filepath.Join(nb.dir, fmt.Sprintf("%s-%d.log", name, i)))
		if err != nil {
			return nil, err
		}
		p := &nullPartition{f: f}
		for r := 1; nb.perReplica && r < rf; r++ {
			rfile, err := os.Create(filepath.Join(nb.dir, fmt.Sprintf("%s-%d.replica-%d.log", name, i, r)))
			if err != nil {
				return nil, err
			}
			p.replicas = append(p.replicas, rfile)
		}
		t.parts = append(t.parts, p)
	}
	return t, nil
}

func (nb *nullBroker) produce(r *kmsg.ProduceRequest) (*kmsg.ProduceResponse, error) {
	resp := r.ResponseKind().(*kmsg.ProduceResponse)
	for _, rt := range r.Topics {
		st := kmsg.NewProduceResponseTopic()
		st.Topic = rt.Topic
		for _, rp := range rt.Partitions {
			sp := kmsg.NewProduceResponseTopicPartition()
			sp.Partition = rp.Partition
			p := nb.partition(rt.Topic, rp.Partition)
			if p == nil {
				sp.ErrorCode = kerr.UnknownTopicOrPartition.Code
			} else {
				base, err := p.append(rp.Records)
				switch {
				case errors.Is(err, errNullDeleted):
					sp.ErrorCode = kerr.UnknownTopicOrPartition.Code
				case err != nil:
					return nil, err
				}
				sp.BaseOffset = base
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp, nil
}

var errNullDeleted = errors.New("the partition's topic was deleted")

// append stamps offsets into the batches of records, writes them to the
// file and wakes long-polling fetches. It returns the first offset.
func (p *nullPartition) append(records []byte) (int64, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.deleted {
		return 0, errNullDeleted
	}
	first := p.next
	pos := p.size
	for b := records; len(b) >= 61; {
		size := int(binary.BigEndian.Uint32(b[8:12])) + 12
		if size < 61 || size > len(b) {
			return 0, errors.New("truncated batch")
		}
		delta := int64(binary.BigEndian.Uint32(b[23:27]))
		binary.BigEndian.PutUint64(b[0:8], uint64(p.next))
		p.batches = append(p.batches, nullBatch{base: p.next, last: p.next + delta, pos: pos, size: int32(size)})
		p.next += delta + 1
		pos += int64(size)
		b = b[size:]
	}
	if _, err := p.f.Write(records); err != nil {
		return 0, err
	}
	for _, f := range p.replicas {
		if _, err := f.Write(records); err != nil {
			return 0, err
		}
	}
	p.size = pos
	p.wakeLocked()
	return first, nil
}

func (p *nullPartition) wakeLocked() {
	for _, w := range p.waiters {
		select {
		case w <- struct{}{}:
		default:
		}
	}
	p.waiters = p.waiters[:0]
}

// read returns whole batches from offset on, at least one if any, up to
// maxBytes, and the log end offset.
func (p *nullPartition) read(offset int64, maxBytes int32) ([]byte, int64, error) {
	p.mu.Lock()
	i := sort.Search(len(p.batches), func(i int) bool { return p.batches[i].last >= offset })
	end := p.next
	if i == len(p.batches) {
		p.mu.Unlock()
		return nil, end, nil
	}
	start := p.batches[i].pos
	n := int64(p.batches[i].size)
	for j := i + 1; j < len(p.batches) && n+int64(p.batches[j].size) <= int64(maxBytes); j++ {
		n += int64(p.batches[j].size)
	}
	p.mu.Unlock()
	buf := make([]byte, n)
	_, err := p.f.ReadAt(buf, start)
	return buf, end, err
}

func (p *nullPartition) watch(w chan struct{}) {
	p.mu.Lock()
	p.waiters = append(p.waiters, w)
	p.mu.Unlock()
}

func (nb *nullBroker) fetch(ctx context.Context, r *kmsg.FetchRequest) *kmsg.FetchResponse {
	deadline := time.Now().Add(time.Duration(r.MaxWaitMillis) * time.Millisecond)
	for {
		wake := make(chan struct{}, 1)
		resp, n := nb.readFetch(r, wake)
		wait := time.Until(deadline)
		if n >= int(max(r.MinBytes, 1)) || wait <= 0 {
			return resp
		}
		t := time.NewTimer(wait)
		select {
		case <-wake:
		case <-t.C:
		case <-ctx.Done():
		}
		t.Stop()
	}
}

// readFetch reads every partition once; when a partition has nothing it
// registers wake on it.
func (nb *nullBroker) readFetch(r *kmsg.FetchRequest, wake chan struct{}) (*kmsg.FetchResponse, int) {
	resp := r.ResponseKind().(*kmsg.FetchResponse)
	total := 0
	budget := int(r.MaxBytes)
	if budget <= 0 {
		budget = 1 << 30
	}
	for _, rt := range r.Topics {
		st := kmsg.NewFetchResponseTopic()
		st.Topic = rt.Topic
		for _, rp := range rt.Partitions {
			sp := kmsg.NewFetchResponseTopicPartition()
			sp.Partition = rp.Partition
			p := nb.partition(rt.Topic, rp.Partition)
			switch {
			case p == nil:
				sp.ErrorCode = kerr.UnknownTopicOrPartition.Code
			case budget <= 0:
				p.watch(wake)
			default:
				data, end, err := p.read(rp.FetchOffset, min(rp.PartitionMaxBytes, int32(budget)))
				if err != nil {
					sp.ErrorCode = kerr.KafkaStorageError.Code
				}
				sp.HighWatermark, sp.LastStableOffset, sp.LogStartOffset = end, end, 0
				if rp.FetchOffset > end {
					sp.ErrorCode = kerr.OffsetOutOfRange.Code
				}
				sp.RecordBatches = data
				if len(data) == 0 {
					sp.RecordBatches = []byte{}
					p.watch(wake)
				}
				total += len(data)
				budget -= len(data)
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp, total
}

func (nb *nullBroker) listOffsets(r *kmsg.ListOffsetsRequest) *kmsg.ListOffsetsResponse {
	resp := r.ResponseKind().(*kmsg.ListOffsetsResponse)
	for _, rt := range r.Topics {
		st := kmsg.NewListOffsetsResponseTopic()
		st.Topic = rt.Topic
		for _, rp := range rt.Partitions {
			sp := kmsg.NewListOffsetsResponseTopicPartition()
			sp.Partition = rp.Partition
			p := nb.partition(rt.Topic, rp.Partition)
			if p == nil {
				sp.ErrorCode = kerr.UnknownTopicOrPartition.Code
			} else {
				p.mu.Lock()
				end := p.next
				p.mu.Unlock()
				sp.Offset = 0
				if rp.Timestamp == -1 {
					sp.Offset = end
				}
				sp.Timestamp = -1
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp
}
