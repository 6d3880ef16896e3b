package chaos

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// storageFault damages a stopped broker's files of one partition.
type storageFault struct {
	name   string
	clean  bool // stopped with SIGTERM (clean-shutdown marker) instead of kill -9
	leader bool // applied to the partition's leader rather than a follower
	apply  func(rng *rand.Rand, logDir, partDir string) (string, error)
}

var storageFaults = []storageFault{
	{"segment tail cut", false, true, cutTail},
	{"segment tail overwritten with garbage", false, false, garbageTail},
	{"offset indexes deleted", true, false, deleteIndexes},
	{"offset indexes corrupted", false, true, corruptIndexes},
	{"checkpoint files truncated", false, false, truncateCheckpoints},
	{"segment tail cut after a clean shutdown", true, false, cutTail},
	{"segment tail overwritten with garbage after a clean shutdown", true, true, garbageTail},
}

// TestStorageFaults damages one broker's files while it is stopped,
// restarts it, and checks that it comes back in the ISR with a log equal to
// its peers' and that nothing acknowledged is lost.
func TestStorageFaults(t *testing.T) {
	needMode(t, "full")
	s := seed()
	rng := rand.New(rand.NewPCG(s, 2))
	dir := runDir(t, "storage-faults", s)
	t.Logf("storage faults: seed=%d, out %s", s, dir)
	c := startCluster(t, clusterOpts{brokers: 3, runDir: dir})
	const topic, partitions = "store", 2
	must(t, c.createTopic(topic, partitions, 3, map[string]string{"min.insync.replicas": "2"}), "creating the topic")
	must(t, c.waitHealthy(topic, partitions, 3, 60*time.Second), "cluster ready")

	var acked []string
	next := 0
	produce := func(n int) {
		t.Helper()
		vals := make([]string, n)
		for i := range vals {
			vals[i] = fmt.Sprintf("s-%07d", next)
			next++
		}
		got, err := produceSync(c.upSeeds(), topic, partitions, vals)
		acked = append(acked, got...)
		must(t, err, "producing")
	}
	produce(16000) // more than one 1 MiB segment per partition

	for i, f := range storageFaults {
		p := int32(i % partitions)
		st, err := c.describe(topic)
		must(t, err, "describe")
		id := st[p].leader
		if !f.leader {
			id = st[p].isr[len(st[p].isr)-1]
			if id == st[p].leader {
				id = st[p].isr[0]
			}
		}
		n := c.node(id)
		if f.clean {
			n.stop()
		} else {
			n.kill9()
		}
		partDir := filepath.Join(n.dataDir, fmt.Sprintf("%s-%d", topic, p))
		what, err := f.apply(rng, n.dataDir, partDir)
		must(t, err, f.name)
		role := map[bool]string{true: "leader", false: "follower"}[id == st[p].leader]
		t.Logf("storage fault %q on node %d (%s of partition %d): %s", f.name, id, role, p, what)
		produce(500)
		must(t, n.start(), "restart")
		if err := c.waitHealthy(topic, partitions, 3, 90*time.Second); err != nil {
			t.Fatalf("after %s on node %d: %v", f.name, id, err)
		}
		if err := c.checkConverged(topic, partitions, 60*time.Second); err != nil {
			t.Fatalf("after %s on node %d: %v", f.name, id, err)
		}
		produce(500)
		got, err := readValues(c.seeds(), topic, partitions, 60*time.Second)
		must(t, err, "reading back")
		if err := checkAllThere(got, acked); err != nil {
			t.Fatalf("after %s on node %d: %v", f.name, id, err)
		}
		t.Logf("storage fault %q: node %d back in every ISR, replicas identical, %d acknowledged values all there once", f.name, id, len(acked))
	}
}

// lastSegment returns the last .log of a partition holding at least min
// bytes of whole batches, and that length.
func lastSegment(partDir string, min int) (string, int, error) {
	files, err := filepath.Glob(filepath.Join(partDir, "*.log"))
	if err != nil {
		return "", 0, err
	}
	sort.Strings(files)
	for i := len(files) - 1; i >= 0; i-- {
		b, err := os.ReadFile(files[i])
		if err != nil {
			return "", 0, err
		}
		if n := len(wholeBatches(b)); n >= min {
			return files[i], n, nil
		}
	}
	return "", 0, fmt.Errorf("no segment in %s holds %d bytes", partDir, min)
}

func cutTail(rng *rand.Rand, _, partDir string) (string, error) {
	f, size, err := lastSegment(partDir, 1000)
	if err != nil {
		return "", err
	}
	cut := size - 1 - rng.IntN(300)
	return fmt.Sprintf("%s cut from %d to %d bytes", filepath.Base(f), size, cut), os.Truncate(f, int64(cut))
}

func garbageTail(rng *rand.Rand, _, partDir string) (string, error) {
	f, size, err := lastSegment(partDir, 1000)
	if err != nil {
		return "", err
	}
	n := 50 + rng.IntN(400)
	return fmt.Sprintf("%s: last %d of %d bytes overwritten", filepath.Base(f), n, size), overwrite(rng, f, int64(size-n), n)
}

func overwrite(rng *rand.Rand, path string, at int64, n int) error {
	fh, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	garbage := make([]byte, n)
	for i := range garbage {
		garbage[i] = byte(rng.Uint32())
	}
	if _, err := fh.WriteAt(garbage, at); err != nil {
		fh.Close()
		return err
	}
	return fh.Close()
}

func deleteIndexes(_ *rand.Rand, _, partDir string) (string, error) {
	files, _ := filepath.Glob(filepath.Join(partDir, "*.index"))
	for _, f := range files {
		if err := os.Remove(f); err != nil {
			return "", err
		}
	}
	return fmt.Sprintf("%d .index files deleted", len(files)), nil
}

func corruptIndexes(rng *rand.Rand, _, partDir string) (string, error) {
	files, _ := filepath.Glob(filepath.Join(partDir, "*.index"))
	for _, f := range files {
		fi, err := os.Stat(f)
		if err != nil {
			return "", err
		}
		n := int(min(fi.Size(), 4096))
		if n == 0 {
			n = 80
		}
		if err := overwrite(rng, f, 0, n); err != nil {
			return "", err
		}
	}
	return fmt.Sprintf("%d .index files overwritten with garbage", len(files)), nil
}

func truncateCheckpoints(_ *rand.Rand, logDir, partDir string) (string, error) {
	var done []string
	for _, f := range []string{
		filepath.Join(logDir, "recovery-point-offset-checkpoint"),
		filepath.Join(logDir, "replication-offset-checkpoint"),
		filepath.Join(logDir, "log-start-offset-checkpoint"),
		filepath.Join(partDir, "leader-epoch-checkpoint"),
	} {
		fi, err := os.Stat(f)
		if errors.Is(err, os.ErrNotExist) {
			continue
		} else if err != nil {
			return "", err
		}
		if err := os.Truncate(f, fi.Size()/2); err != nil {
			return "", err
		}
		done = append(done, fmt.Sprintf("%s %d->%d", filepath.Base(f), fi.Size(), fi.Size()/2))
	}
	return fmt.Sprint(done), nil
}

var kilobyte = bytes.Repeat([]byte("y"), 1000)

// TestDiskFull runs a broker whose log dir is a small tmpfs: once the
// disk is full, produce gets an error code, the broker keeps serving,
// nothing acknowledged is lost, and writes succeed again once space is
// freed, also after a restart.
func TestDiskFull(t *testing.T) {
	needMode(t, "full")
	if os.Geteuid() != 0 {
		t.Skip("needs root to mount a small tmpfs")
	}
	mnt := filepath.Join(t.TempDir(), "disk")
	must(t, os.Mkdir(mnt, 0o755), "mkdir")
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=32m", "tmpfs", mnt).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a tmpfs: %v: %s", err, bytes.TrimSpace(out))
	}
	t.Cleanup(func() { exec.Command("umount", "-l", mnt).Run() })
	dir := runDir(t, "disk-full", 0)
	c := startCluster(t, clusterOpts{brokers: 1, runDir: dir, dataDir: func(int32) string { return mnt },
		flags: []string{"--metadata.log.dir=" + filepath.Join(t.TempDir(), "meta")}})
	n := c.nodes[0]
	const topic = "full"
	must(t, c.createTopic(topic, 1, 1, nil), "creating the topic")
	must(t, c.waitHealthy(topic, 1, 1, 30*time.Second), "topic ready")

	var st syscall.Statfs_t
	must(t, syscall.Statfs(mnt, &st), "statfs")
	filler := filepath.Join(mnt, "filler")
	free := int64(st.Bavail) * st.Bsize
	must(t, os.WriteFile(filler, make([]byte, free-3<<20), 0o644), "filling the disk")
	t.Logf("disk full: tmpfs of 32 MiB, 3 MiB left after the filler")

	var acked []string
	seq := 0
	batch := func() ([]byte, []string) {
		var vals [][]byte
		var names []string
		for range 64 {
			v := fmt.Sprintf("f-%06d", seq)
			seq++
			vals, names = append(vals, []byte(v)), append(names, v)
		}
		return rawBatch(vals, kilobyte), names
	}
	var code int16
	for i := 0; i < 200 && code == 0; i++ {
		b, names := batch()
		var err error
		code, _, err = produceRaw(n, topic, 0, -1, b)
		must(t, err, "produce on a filling disk")
		if code == 0 {
			acked = append(acked, names...)
		}
	}
	if code == 0 {
		t.Fatal("no produce error after 12 MiB on a disk with 3 MiB free")
	}
	t.Logf("disk full: produce answered %v after %d acknowledged values", kerr.ErrorForCode(code), len(acked))
	for range 3 {
		b, _ := batch()
		code2, _, err := produceRaw(n, topic, 0, -1, b)
		if err != nil || code2 == 0 {
			t.Fatalf("produce on a full disk: code %v, err %v (want an error code)", kerr.ErrorForCode(code2), err)
		}
	}
	if !n.Running() {
		t.Fatal("the broker exited on a full disk")
	}
	got, err := readValues(c.seeds(), topic, 1, 30*time.Second)
	must(t, err, "reading on a full disk")
	must(t, checkAllThere(got, acked), "on a full disk")

	must(t, os.Remove(filler), "freeing space")
	err = waitFor(30*time.Second, "produce to succeed once space is freed", func() error {
		b, names := batch()
		code, _, err := produceRaw(n, topic, 0, -1, b)
		if err != nil {
			return err
		}
		if code != 0 {
			return kerr.ErrorForCode(code)
		}
		acked = append(acked, names...)
		return nil
	})
	must(t, err, "after freeing space")
	got, err = readValues(c.seeds(), topic, 1, 30*time.Second)
	must(t, err, "reading after freeing space")
	must(t, checkAllThere(got, acked), "after freeing space")

	n.stop()
	must(t, n.start(), "restart")
	must(t, c.waitHealthy(topic, 1, 1, 60*time.Second), "after restart")
	got, err = readValues(c.seeds(), topic, 1, 30*time.Second)
	must(t, err, "reading after restart")
	must(t, checkAllThere(got, acked), "after restart")
	t.Logf("disk full: broker stayed up, %d acknowledged values all there after freeing space and after a restart", len(acked))
}
