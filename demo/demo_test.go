package demo

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestNarratorStampsTimeSinceStart(t *testing.T) {
	now := time.Unix(100, 0)
	var b bytes.Buffer
	n := newNarratorClock(&b, func() time.Time { return now })
	n.Say("first")
	now = now.Add(3250 * time.Millisecond)
	n.Heading("part %d", 2)
	now = now.Add(61 * time.Second)
	n.Say("two\nlines")
	want := "[   0.0s] first\n" +
		"\n[   3.2s] == part 2 ==\n" +
		"[  64.2s] two\n" +
		"          lines\n"
	if b.String() != want {
		t.Errorf("narration\n%q, want\n%q", b.String(), want)
	}
}

// writeSegment writes a preallocated segment: the batches, then zeros.
func writeSegment(t *testing.T, dir string, base int64, batches ...[]byte) {
	t.Helper()
	var b []byte
	for _, batch := range batches {
		b = append(b, batch...)
	}
	b = append(b, make([]byte, 4096)...)
	name := filepath.Join(dir, fmt.Sprintf("%020d.log", base))
	if err := os.WriteFile(name, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// atOffset stamps a batch's base offset, as the leader does.
func atOffset(batch []byte, base int64) []byte {
	binary.BigEndian.PutUint64(batch, uint64(base))
	return batch
}

func TestLogEndOffset(t *testing.T) {
	dir := t.TempDir()
	if leo, err := logEndOffset(filepath.Join(dir, "none")); leo != 0 || err != nil {
		t.Errorf("no log: %d, %v", leo, err)
	}
	writeSegment(t, dir, 0, atOffset(encodeBatch(1, values("a", 3)), 0), atOffset(encodeBatch(1, values("b", 2)), 3))
	if leo, err := logEndOffset(dir); leo != 5 || err != nil {
		t.Errorf("one segment: %d, %v; want 5", leo, err)
	}
	// An empty active segment: the log ends at its base offset.
	writeSegment(t, dir, 5)
	if leo, err := logEndOffset(dir); leo != 5 || err != nil {
		t.Errorf("empty active segment: %d, %v; want 5", leo, err)
	}
	writeSegment(t, dir, 7, atOffset(encodeBatch(1, values("c", 4)), 7))
	if leo, err := logEndOffset(dir); leo != 11 || err != nil {
		t.Errorf("third segment: %d, %v; want 11", leo, err)
	}
}

func TestEncodeBatch(t *testing.T) {
	b := encodeBatch(1234, []string{"x", "yz"})
	if got := int(binary.BigEndian.Uint32(b[8:])) + 12; got != len(b) {
		t.Errorf("length field says %d bytes, batch has %d", got, len(b))
	}
	if b[16] != 2 {
		t.Errorf("magic %d", b[16])
	}
	if crc := crc32.Checksum(b[21:], crc32.MakeTable(crc32.Castagnoli)); crc != binary.BigEndian.Uint32(b[17:]) {
		t.Error("CRC-32C does not match")
	}
	if n := binary.BigEndian.Uint32(b[57:]); n != 2 {
		t.Errorf("%d records", n)
	}
	if !bytes.Contains(b, []byte("yz")) {
		t.Error("value missing")
	}
}

func TestValueRange(t *testing.T) {
	for _, tc := range []struct {
		in   []string
		want string
	}{
		{nil, "none"},
		{[]string{"a-000"}, "a-000"},
		{values("late", 10), "late-000..late-009"},
		{append(values("late", 2), values("during", 1)...), "late-000..late-001, during-000"},
	} {
		if got := valueRange(tc.in); got != tc.want {
			t.Errorf("valueRange(%v) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestNewKnowsEveryScenario(t *testing.T) {
	for _, name := range Names() {
		s, err := New(name, Config{})
		if err != nil || s.Name != name || s.Title == "" || s.play == nil {
			t.Errorf("New(%q) = %+v, %v", name, s, err)
		}
	}
	if _, err := New("acks2", Config{}); err == nil || !strings.Contains(err.Error(), "acks1, acksall, mininsync, unclean") {
		t.Errorf("unknown scenario: %v", err)
	}
}
