package main

import (
	"os"
	"syscall"
	"testing"
)

const limitsText = `Limit                     Soft Limit           Hard Limit           Units
Max cpu time              unlimited            unlimited            seconds
Max open files            20000                40000                files
Max locked memory         8388608              8388608              bytes
`

func TestParseLimit(t *testing.T) {
	soft, hard, err := parseLimit(limitsText, "Max open files")
	if err != nil || soft != 20000 || hard != 40000 {
		t.Fatalf("Max open files = %d, %d, %v; want 20000, 40000", soft, hard, err)
	}
	soft, hard, err = parseLimit(limitsText, "Max cpu time")
	if err != nil || soft != -1 || hard != -1 {
		t.Fatalf("Max cpu time = %d, %d, %v; want unlimited (-1)", soft, hard, err)
	}
	if _, _, err := parseLimit(limitsText, "Max processes"); err == nil {
		t.Fatal("a missing row parsed")
	}
}

// TestReadHoldOwnProcess: this process's reading agrees with what the
// kernel says directly (its open-file limit) and sees a file it opens.
func TestReadHoldOwnProcess(t *testing.T) {
	before := readHold(os.Getpid())
	if before.Err != "" {
		t.Fatal(before.Err)
	}
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		t.Fatal(err)
	}
	if before.FDLimit != int64(rl.Cur) || before.FDHard != int64(rl.Max) {
		t.Fatalf("limit %d/%d, getrlimit says %d/%d", before.FDLimit, before.FDHard, rl.Cur, rl.Max)
	}
	if before.RSS <= 0 || before.Anon <= 0 || before.Maps <= 0 {
		t.Fatalf("RSS %d, anon %d, maps %d: not read", before.RSS, before.Anon, before.Maps)
	}
	f, err := os.Create(t.TempDir() + "/x.index")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	after := readHold(os.Getpid())
	if after.FDs != before.FDs+1 || after.Segments != before.Segments+1 {
		t.Fatalf("fds %d -> %d, segment files %d -> %d: the opened .index file was not counted",
			before.FDs, after.FDs, before.Segments, after.Segments)
	}
}
