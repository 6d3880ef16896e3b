package broker

// DescribeLogDirs (key 35), v1-v4.
//
// Each log dir with the partitions it holds (size in bytes; no future
// replicas, so offset lag 0), and in v4 the file system's total and usable
// bytes. A null topic list asks for everything.

import (
	"context"
	"path/filepath"
	"slices"
	"sort"

	"golang.org/x/sys/unix"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/protocol"
	"github.com/kbroker/kbroker/security/acl"
)

func (b *Broker) handleDescribeLogDirs(_ context.Context, req *protocol.Request) protocol.Response {
	r := req.Body.(*kmsg.DescribeLogDirsRequest)
	resp := r.ResponseKind().(*kmsg.DescribeLogDirsResponse)
	if resp.ErrorCode = b.clusterAllowed(req, acl.OpDescribe); resp.ErrorCode != 0 {
		return protocol.Response{Body: resp}
	}
	wanted := func(topic string, p int32) bool {
		if r.Topics == nil {
			return true
		}
		for _, t := range r.Topics {
			if t.Topic == topic && slices.Contains(t.Partitions, p) {
				return true
			}
		}
		return false
	}
	byDir := map[string]map[string][]kmsg.DescribeLogDirsResponseDirTopicPartition{}
	for _, part := range b.replicas.Partitions() {
		if !wanted(part.Topic, part.Index) {
			continue
		}
		dir, _ := filepath.Abs(filepath.Dir(part.Log().Dir()))
		if byDir[dir] == nil {
			byDir[dir] = map[string][]kmsg.DescribeLogDirsResponseDirTopicPartition{}
		}
		p := kmsg.NewDescribeLogDirsResponseDirTopicPartition()
		p.Partition, p.Size = part.Index, part.Log().Size()
		byDir[dir][part.Topic] = append(byDir[dir][part.Topic], p)
	}
	for _, d := range b.cfg.LogDirs {
		abs, _ := filepath.Abs(d)
		out := kmsg.NewDescribeLogDirsResponseDir()
		out.Dir = abs
		var st unix.Statfs_t
		if err := unix.Statfs(abs, &st); err == nil {
			out.TotalBytes = int64(st.Blocks) * st.Bsize
			out.UsableBytes = int64(st.Bavail) * st.Bsize
		} else {
			out.ErrorCode = kerr.KafkaStorageError.Code
			out.TotalBytes, out.UsableBytes = -1, -1
		}
		topics := byDir[abs]
		names := make([]string, 0, len(topics))
		for name := range topics {
			names = append(names, name)
		}
		sort.Strings(names)
		for _, name := range names {
			t := kmsg.NewDescribeLogDirsResponseDirTopic()
			t.Topic, t.Partitions = name, topics[name]
			out.Topics = append(out.Topics, t)
		}
		resp.Dirs = append(resp.Dirs, out)
	}
	return protocol.Response{Body: resp}
}
