package storage

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

func TestCheckResourceLimits(t *testing.T) {
	need := EstimateNeed(10000, 1024)
	if need.Files != 10000+reservedFiles || need.Maps != 30000+3072+reservedMaps {
		t.Fatalf("need %+v", need)
	}
	for _, tc := range []struct {
		name  string
		lim   ResourceLimits
		want  []string // the limits reported
		words []string // in the messages
	}{
		{name: "fits", lim: ResourceLimits{OpenFiles: 20000, OpenFilesHard: 20000, MaxMapCount: 65530}},
		{name: "unknown limits are not checked", lim: ResourceLimits{}},
		{name: "the soft limit is raised to the hard one", lim: ResourceLimits{OpenFiles: 1024, OpenFilesHard: 1 << 20, MaxMapCount: 65530}},
		{name: "too few files", lim: ResourceLimits{OpenFiles: 8192, OpenFilesHard: 8192, MaxMapCount: 65530},
			want: []string{"RLIMIT_NOFILE"}, words: []string{"RLIMIT_NOFILE) of 8192", "10000 partitions", "at least 11024", "LimitNOFILE=11024"}},
		{name: "too few maps", lim: ResourceLimits{OpenFiles: 1 << 20, OpenFilesHard: 1 << 20, MaxMapCount: 30000},
			want: []string{"vm.max_map_count"}, words: []string{"vm.max_map_count of 30000", "at least 34096", "sysctl -w vm.max_map_count=34096"}},
		{name: "both", lim: ResourceLimits{OpenFiles: 4096, OpenFilesHard: 4096, MaxMapCount: 30000},
			want: []string{"RLIMIT_NOFILE", "vm.max_map_count"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			probs := CheckResourceLimits(tc.lim, need)
			var got []string
			for _, p := range probs {
				got = append(got, p.Limit)
				if strings.Contains(p.Message, "\n") {
					t.Errorf("message spans lines: %q", p.Message)
				}
				for _, w := range tc.words {
					if !strings.Contains(p.Message, w) {
						t.Errorf("message %q lacks %q", p.Message, w)
					}
				}
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Fatalf("problems %v, want %v", got, tc.want)
			}
		})
	}
}

func TestPartitionsThatFit(t *testing.T) {
	for _, tc := range []struct {
		lim  ResourceLimits
		want int
	}{
		{ResourceLimits{}, -1},
		{ResourceLimits{OpenFiles: 20000}, 20000 - reservedFiles},
		{ResourceLimits{OpenFiles: 1 << 20, MaxMapCount: 65530}, (65530 - reservedMaps - 3*1024) / 3},
		{ResourceLimits{OpenFiles: 100, MaxMapCount: 65530}, 0},
	} {
		if got := tc.lim.PartitionsThatFit(1024); got != tc.want {
			t.Errorf("%+v: %d partitions fit, want %d", tc.lim, got, tc.want)
		}
	}
}

func fixedLimits(lim ResourceLimits) func() (ResourceLimits, uint64, error) {
	return func() (ResourceLimits, uint64, error) { return lim, 0, nil }
}

// At start the manager compares the limits with the partitions in its log
// dirs (one line with what to raise, and to what), and again as Open adds
// partitions past nine tenths of what the limits hold.
func TestManagerChecksLimitsAtStartAndAsPartitionsGrow(t *testing.T) {
	root := t.TempDir()
	for p := range 30 {
		os.MkdirAll(filepath.Join(root, fmt.Sprintf("t-%d", p)), 0o755)
	}
	logger, lb := testLogger(t)
	lim := ResourceLimits{OpenFiles: reservedFiles + 20, OpenFilesHard: reservedFiles + 20, MaxMapCount: 1 << 20}
	m, err := NewManager([]string{root}, ManagerOptions{Logger: logger, ResourceLimits: fixedLimits(lim)})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	out := lb.String()
	if !strings.Contains(out, "level=ERROR") || !strings.Contains(out, fmt.Sprintf("at least %d", reservedFiles+30)) ||
		!strings.Contains(out, "partitions_that_fit=20") {
		t.Fatalf("no ERROR line with what to raise for 30 partitions and room for 20:\n%s", out)
	}
	if st := m.Stats(); st.PartitionsThatFit != 20 || st.Limits != lim {
		t.Fatalf("stats %+v", st)
	}

	// Room for 100: the start is quiet; growing past 90 warns.
	root2 := t.TempDir()
	logger2, lb2 := testLogger(t)
	lim.OpenFiles, lim.OpenFilesHard = reservedFiles+100, reservedFiles+100
	m2, err := NewManager([]string{root2}, ManagerOptions{Logger: logger2, ResourceLimits: fixedLimits(lim)})
	if err != nil {
		t.Fatal(err)
	}
	defer m2.Close()
	cfg := smallConfig()
	for p := range 90 {
		if _, err := m2.Open(TopicPartition{Topic: "t", Partition: int32(p)}, [16]byte{}, cfg); err != nil {
			t.Fatal(err)
		}
	}
	if out := lb2.String(); strings.Contains(out, "level=WARN") || strings.Contains(out, "level=ERROR") {
		t.Fatalf("90 of 100 partitions: %s", out)
	}
	m2.Open(TopicPartition{Topic: "t", Partition: 90}, [16]byte{}, cfg)
	if out := lb2.String(); !strings.Contains(out, "nine tenths") {
		t.Fatalf("91 of 100 partitions, no warning: %s", out)
	}
	for p := 91; p <= 101; p++ {
		m2.Open(TopicPartition{Topic: "t", Partition: int32(p)}, [16]byte{}, cfg)
	}
	if out := lb2.String(); !strings.Contains(out, fmt.Sprintf("at least %d", reservedFiles+101)) {
		t.Fatalf("past the limit, no ERROR line: %s", out)
	}
}

// withOpenFileLimit lowers the soft RLIMIT_NOFILE to the descriptors open
// now plus extra for the test, and restores it.
func withOpenFileLimit(t *testing.T, extra uint64) {
	t.Helper()
	var rl unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &rl); err != nil {
		t.Skip(err)
	}
	fds, _ := procCounts(t)
	// The limit is on the highest descriptor number: leave no gap below it.
	low := rl
	low.Cur = uint64(fds) + extra
	if err := unix.Setrlimit(unix.RLIMIT_NOFILE, &low); err != nil {
		t.Skip(err)
	}
	t.Cleanup(func() { unix.Setrlimit(unix.RLIMIT_NOFILE, &rl) })
}

// holdDescriptors opens /dev/null until no descriptor is left.
func holdDescriptors(t *testing.T) []*os.File {
	var held []*os.File
	for {
		f, err := os.Open(os.DevNull)
		if err != nil {
			if !errors.Is(err, syscall.EMFILE) {
				t.Fatal(err)
			}
			return held
		}
		held = append(held, f)
	}
}

// A log that cannot be opened for want of descriptors fails with
// ErrTooManyOpenFiles and leaves its partition offline with the reason,
// in OfflineLogs, LogDirs and Stats (the dir stays online: the disk is
// fine); once descriptors are back the next Open succeeds and clears it.
func TestOpenFailureForWantOfDescriptorsIsVisible(t *testing.T) {
	root := t.TempDir()
	logger, lb := testLogger(t)
	m, err := NewManager([]string{root}, ManagerOptions{Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	cfg := smallConfig()
	withOpenFileLimit(t, 20)
	var failed TopicPartition
	var openErr error
	for p := range 100 {
		tp := TopicPartition{Topic: "t", Partition: int32(p)}
		if _, openErr = m.Open(tp, [16]byte{}, cfg); openErr != nil {
			failed = tp
			break
		}
	}
	if !errors.Is(openErr, ErrTooManyOpenFiles) || !errors.Is(openErr, ErrResourceLimit) || !errors.Is(openErr, syscall.EMFILE) {
		t.Fatalf("open with no descriptors left: %v", openErr)
	}
	o, ok := m.OfflineLogOf(failed)
	if !ok || o.Reason != ReasonTooManyOpenFiles || o.LogDir != root || o.Attempts != 1 {
		t.Fatalf("offline state %+v (%v)", o, ok)
	}
	held := holdDescriptors(t)
	if _, err := m.Open(failed, [16]byte{}, cfg); !errors.Is(err, ErrTooManyOpenFiles) {
		t.Fatalf("second open with no descriptors left: %v", err)
	}
	if o, _ = m.OfflineLogOf(failed); o.Attempts != 2 {
		t.Fatalf("attempts %d", o.Attempts)
	}
	if st := m.Stats(); st.OfflineLogs[ReasonTooManyOpenFiles] != 1 || st.OfflineLogDirs != 0 {
		t.Fatalf("stats %+v", st)
	}
	if d := m.LogDirs(); len(d) != 1 || d[0].Offline || d[0].OfflineLogs != 1 || d[0].Logs != int(failed.Partition) {
		t.Fatalf("log dirs %+v", d)
	}
	if !strings.Contains(lb.String(), "partition offline") || !strings.Contains(lb.String(), "reason=too_many_open_files") {
		t.Fatalf("not logged: %s", lb.String())
	}
	// Descriptors come back (the limit is raised).
	for _, f := range held {
		f.Close()
	}
	var rl unix.Rlimit
	unix.Getrlimit(unix.RLIMIT_NOFILE, &rl)
	rl.Cur = rl.Max
	unix.Setrlimit(unix.RLIMIT_NOFILE, &rl)
	if _, err := m.Open(failed, [16]byte{}, cfg); err != nil {
		t.Fatal(err)
	}
	if _, ok := m.OfflineLogOf(failed); ok || len(m.OfflineLogs()) != 0 || len(m.Stats().OfflineLogs) != 0 {
		t.Fatal("still offline after a successful open")
	}
}

// An I/O error takes the log dir offline: the partition is offline with
// reason log_dir_failure, later partitions go to the other dir, and the
// failed one stays where it failed (never a second copy).
func TestIOErrorTakesLogDirOffline(t *testing.T) {
	root := t.TempDir()
	dirs := []string{filepath.Join(root, "a"), filepath.Join(root, "b")}
	ff := &faultyFallocate{}
	fallocate := func(f *os.File, off, n int64) error {
		if strings.HasPrefix(f.Name(), dirs[0]) {
			return ff.fallocate(f, off, n)
		}
		return osFallocate(f, off, n)
	}
	logger, lb := testLogger(t)
	m, err := NewManager(dirs, ManagerOptions{Logger: logger, Fallocate: fallocate})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	ff.fail(syscall.EIO)
	bad := TopicPartition{Topic: "t", Partition: 0}
	if _, err := m.Open(bad, [16]byte{}, smallConfig()); !errors.Is(err, syscall.EIO) {
		t.Fatalf("open on a failing disk: %v", err)
	}
	if o, ok := m.OfflineLogOf(bad); !ok || o.Reason != ReasonLogDirFailure || o.LogDir != dirs[0] {
		t.Fatalf("offline %+v", o)
	}
	if d := m.LogDirs(); !d[0].Offline || d[1].Offline || m.Stats().OfflineLogDirs != 1 {
		t.Fatalf("log dirs %+v", d)
	}
	if !strings.Contains(lb.String(), "log dir offline") {
		t.Fatal("the dir failure is not logged")
	}
	ff.heal() // the dir stays offline until restart, as Kafka's
	if _, err := m.Open(bad, [16]byte{}, smallConfig()); !errors.Is(err, ErrLogDirOffline) {
		t.Fatalf("reopen in an offline dir: %v", err)
	}
	for p := 1; p <= 3; p++ {
		l, err := m.Open(TopicPartition{Topic: "t", Partition: int32(p)}, [16]byte{}, smallConfig())
		if err != nil || filepath.Dir(l.Dir()) != dirs[1] {
			t.Fatalf("new partition: %v in %v", err, l)
		}
	}
	if err := m.Delete(bad); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dirs[0], "t-0")); !errors.Is(err, os.ErrNotExist) || len(m.OfflineLogs()) != 0 {
		t.Fatalf("deleting the offline partition left %v", err)
	}
}

func TestOfflineReasons(t *testing.T) {
	for err, want := range map[error]string{
		diskError("open segment", syscall.EMFILE):   ReasonTooManyOpenFiles,
		diskError("open segment", syscall.ENFILE):   ReasonTooManyOpenFiles,
		diskError("mmap x", syscall.ENOMEM):         ReasonTooManyMappings,
		diskError("fallocate x", syscall.ENOSPC):    ReasonDiskFull,
		diskError("write x", syscall.EIO):           ReasonLogDirFailure,
		fmt.Errorf("x: %w", ErrInconsistentTopicID): ReasonStorageError,
	} {
		if got := OfflineReason(err); got != want {
			t.Errorf("%v: %s, want %s", err, got, want)
		}
	}
}
