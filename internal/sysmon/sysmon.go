// Package sysmon keeps the Go runtime's sysmon thread out of its deep
// sleep in a broker process.
//
// When every P of a Go process is idle, sysmon sleeps on a note, and the
// first system call after that wakes it with a futex (entersyscall ->
// entersyscallWakeSysmon), after which sysmon runs again on its own
// thread. A broker serving small requests at a modest rate goes idle
// between nearly every pair of requests, so it pays that wake-up over and
// over: under w4 (5,000 one-record acks=all produce requests a second on
// three brokers) it was 0.50 s of the brokers' 0.60 s of futex wake-ups in
// a 30 s profile. With GODEBUG=schedtrace set, sysmon never takes the deep
// sleep (it polls, at most every 10 ms when idle: about 100 wake-ups a
// second). Measured with bench/results/2026-12-02-hot/w4counts.sh, same
// binary, two pairs at load average 6-9: 252 -> 211 µs of the three
// brokers' CPU and 10.4 -> 5.7 voluntary context switches per produce
// request.
//
// GODEBUG is read once, when the runtime starts, so KeepAwake re-executes
// the process with it set. The period is the largest schedtrace takes
// (2^31-1 ms, 24.8 days): a scheduler trace line is printed to standard
// error once per period, counted from the machine's boot, and a fatal
// runtime error prints the scheduler's state as well.
package sysmon

import "strings"

// Setting is what KeepAwake adds to GODEBUG.
const Setting = "schedtrace=2147483647"

// OptOut, set to 1 in the environment, leaves the runtime as it is.
const OptOut = "KBROKER_SYSMON_DEEP_SLEEP"

// Environ returns environ with Setting added to GODEBUG, and whether it
// changed: not when GODEBUG already sets schedtrace (the operator's
// choice, or the process was re-executed already) or OptOut is 1.
func Environ(environ []string) ([]string, bool) {
	godebug := -1
	for i, kv := range environ {
		switch {
		case kv == OptOut+"=1":
			return environ, false
		case strings.HasPrefix(kv, "GODEBUG="):
			godebug = i
		}
	}
	out := append([]string(nil), environ...)
	if godebug < 0 {
		return append(out, "GODEBUG="+Setting), true
	}
	value := strings.TrimPrefix(environ[godebug], "GODEBUG=")
	for _, setting := range strings.Split(value, ",") {
		if strings.HasPrefix(setting, "schedtrace=") {
			return environ, false
		}
	}
	if value == "" {
		out[godebug] = "GODEBUG=" + Setting
	} else {
		out[godebug] = "GODEBUG=" + value + "," + Setting
	}
	return out, true
}
