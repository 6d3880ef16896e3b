package storage

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"github.com/kbroker/kbroker/storage/vfs"
	"io/fs"
	"sort"
	"strconv"
	"strings"
)

// Kafka's per-log-dir checkpoint file names.
const (
	RecoveryPointCheckpointFile  = "recovery-point-offset-checkpoint"
	ReplicationCheckpointFile    = "replication-offset-checkpoint"
	LogStartOffsetCheckpointFile = "log-start-offset-checkpoint"
	CleanerOffsetCheckpointFile  = "cleaner-offset-checkpoint"
	CleanShutdownFile            = ".kafka_cleanshutdown"
	LeaderEpochCheckpointFile    = "leader-epoch-checkpoint"
	PartitionMetadataFile        = "partition.metadata"
)

// checkpointVersion is the only version of Kafka's text checkpoint format.
const checkpointVersion = 0

// TopicPartition names a partition.
type TopicPartition struct {
	Topic     string
	Partition int32
}

func (tp TopicPartition) String() string { return tp.Topic + "-" + strconv.Itoa(int(tp.Partition)) }

// encodeCheckpoint renders Kafka's checkpoint text format:
//
//	<version>\n<count>\n<line>\n...
func encodeCheckpoint(lines []string) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "%d\n%d\n", checkpointVersion, len(lines))
	for _, l := range lines {
		b.WriteString(l)
		b.WriteByte('\n')
	}
	return b.Bytes()
}

// readCheckpoint parses the checkpoint text format and returns the entry
// lines split on spaces, each with exactly fields fields. A missing file is
// (nil, fs.ErrNotExist); any malformation (wrong version, count mismatch,
// truncated file) is ErrCorruptCheckpoint.
func readCheckpoint(fsys vfs.FS, path string, fields int) ([][]string, error) {
	data, err := vfs.ReadFile(fsys, path)
	if err != nil {
		return nil, err
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	next := func() (string, bool) {
		if !sc.Scan() {
			return "", false
		}
		return sc.Text(), true
	}
	corrupt := func(why string) error {
		return fmt.Errorf("%w: %s: %s", ErrCorruptCheckpoint, path, why)
	}
	v, ok := next()
	if !ok || v != strconv.Itoa(checkpointVersion) {
		return nil, corrupt("bad version line")
	}
	c, ok := next()
	count, err := strconv.Atoi(c)
	if !ok || err != nil || count < 0 {
		return nil, corrupt("bad count line")
	}
	if !bytes.HasSuffix(data, []byte("\n")) {
		return nil, corrupt("no final newline (truncated)")
	}
	out := make([][]string, 0, count)
	for line, ok := next(); ok; line, ok = next() {
		f := strings.Split(line, " ")
		if len(f) != fields {
			return nil, corrupt(fmt.Sprintf("line %q", line))
		}
		out = append(out, f)
	}
	if len(out) != count {
		return nil, corrupt(fmt.Sprintf("%d entries, header says %d", len(out), count))
	}
	return out, nil
}

// writeOffsetCheckpoint writes "<topic> <partition> <offset>" lines
// atomically, sorted for stable files.
func writeOffsetCheckpoint(fsys vfs.FS, path string, offsets map[TopicPartition]int64) error {
	tps := make([]TopicPartition, 0, len(offsets))
	for tp := range offsets {
		tps = append(tps, tp)
	}
	sort.Slice(tps, func(i, j int) bool {
		if tps[i].Topic != tps[j].Topic {
			return tps[i].Topic < tps[j].Topic
		}
		return tps[i].Partition < tps[j].Partition
	})
	lines := make([]string, len(tps))
	for i, tp := range tps {
		lines[i] = fmt.Sprintf("%s %d %d", tp.Topic, tp.Partition, offsets[tp])
	}
	return writeFileAtomic(fsys, path, encodeCheckpoint(lines))
}

// readOffsetCheckpoint reads a file written by writeOffsetCheckpoint. A
// missing file is an empty map and no error.
func readOffsetCheckpoint(fsys vfs.FS, path string) (map[TopicPartition]int64, error) {
	rows, err := readCheckpoint(fsys, path, 3)
	if errors.Is(err, fs.ErrNotExist) {
		return map[TopicPartition]int64{}, nil
	}
	if err != nil {
		return nil, err
	}
	out := make(map[TopicPartition]int64, len(rows))
	for _, r := range rows {
		p, err1 := strconv.ParseInt(r[1], 10, 32)
		o, err2 := strconv.ParseInt(r[2], 10, 64)
		if err1 != nil || err2 != nil {
			return nil, fmt.Errorf("%w: %s: line %q", ErrCorruptCheckpoint, path, strings.Join(r, " "))
		}
		out[TopicPartition{Topic: r[0], Partition: int32(p)}] = o
	}
	return out, nil
}
