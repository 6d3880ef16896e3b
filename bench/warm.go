package main

import (
	"bufio"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"time"
)

// warmMemory touches about the machine's available memory once (anonymous
// memory, then handed back to the kernel), so that the page cache the
// measured runs write into is made of memory the machine has touched
// before. On this VM the first touch of guest memory costs about nine times
// a later one (writing 2 GiB into page cache: 1.34 s of CPU per GiB into
// never-used memory, 0.15-0.18 s into reused memory), which would otherwise
// charge whichever target runs first (kbroker, in A B C order) for the VM
// rather than for itself. It only goes so far: the VM reports freed memory
// to its host at once (free page reporting, min_free_ms=0), so memory freed
// here, and the page cache of each run's deleted data, soon costs a host
// fault again.
func warmMemory(log func(format string, args ...any)) error {
	avail, err := memAvailable()
	if err != nil {
		return err
	}
	size := avail - 2<<30 // leave room for the brokers and the client
	if size <= 0 {
		return nil
	}
	start := time.Now()
	var chunks [][]byte
	for done := int64(0); done < size; done += 1 << 30 {
		c := make([]byte, min(1<<30, size-done))
		for i := 0; i < len(c); i += 4096 {
			c[i] = 1
		}
		chunks = append(chunks, c)
	}
	chunks = nil
	runtime.GC()
	debug.FreeOSMemory()
	log("touched %.1f GiB of memory once, then gave it back, in %v, so that no target pays the VM's first touch of memory",
		float64(size)/(1<<30), time.Since(start).Round(time.Millisecond))
	return nil
}

func memAvailable() (int64, error) {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) >= 2 && fields[0] == "MemAvailable:" {
			kb, err := strconv.ParseInt(fields[1], 10, 64)
			return kb << 10, err
		}
	}
	return 0, fmt.Errorf("MemAvailable not in /proc/meminfo")
}
