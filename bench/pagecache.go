package main

// kbench pagecache: what this machine charges for writing into page cache,
// the cost that dominates replication here. It writes a file of the given
// size in chunks, first into new pages, then over the same (cached) pages,
// and prints the CPU (rusage, this process) per MB of each.

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

func pagecacheCmd(args []string) error {
	fs := flag.NewFlagSet("pagecache", flag.ExitOnError)
	dir := fs.String("dir", os.TempDir(), "directory for the file (the filesystem under test)")
	mib := fs.Int("mib", 256, "MiB written per measurement")
	chunks := fs.String("chunks", "4096,16384,65536,262144,1048576", "write sizes in bytes, comma separated")
	fs.Parse(args)
	// Every measurement gets its own file, all deleted at the end: a file
	// deleted at once would hand its just-backed pages to the next one.
	var names []string
	defer func() {
		for _, n := range names {
			os.Remove(n)
		}
	}()
	for i, c := range strings.Split(*chunks, ",") {
		n, err := strconv.Atoi(c)
		if err != nil || n <= 0 {
			return fmt.Errorf("--chunks: bad size %q", c)
		}
		name := filepath.Join(*dir, fmt.Sprintf("kbench-pagecache-%d", i))
		names = append(names, name)
		fresh, over, err := pagecacheMeasure(name, n, *mib<<20)
		if err != nil {
			return err
		}
		fmt.Printf("chunk %8d B: new pages %.2f ms CPU/MB, cached pages %.2f ms CPU/MB (%.1fx)\n",
			n, fresh, over, fresh/over)
	}
	return nil
}

// pagecacheMeasure writes total bytes in chunk-sized writes to a new file,
// then again over it, and returns the CPU per MB (10^6 bytes) of each pass.
func pagecacheMeasure(name string, chunk, total int) (fresh, over float64, err error) {
	f, err := os.Create(name) // truncates what an interrupted run left
	if err != nil {
		return 0, 0, err
	}
	defer f.Close()
	buf := make([]byte, chunk)
	for i := range buf {
		buf[i] = byte(i)
	}
	pass := func() (float64, error) {
		c0 := processCPU()
		for off := 0; off < total; off += chunk {
			if _, err := f.WriteAt(buf, int64(off)); err != nil {
				return 0, fmt.Errorf("writing %s: %w", name, err)
			}
		}
		return float64((processCPU() - c0).Microseconds()) / 1000 / (float64(total) / 1e6), nil
	}
	if fresh, err = pass(); err != nil {
		return 0, 0, err
	}
	over, err = pass()
	return fresh, over, err
}

func processCPU() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
