package protocol

import "testing"

func TestFramePoolClasses(t *testing.T) {
	var p framePool
	for _, n := range []int{1, 4096, 4097, 100_000, 16 << 20} {
		b := p.get(n)
		if len(b) != n || cap(b) < n || cap(b)&(cap(b)-1) != 0 {
			t.Fatalf("get(%d): len %d cap %d", n, len(b), cap(b))
		}
		p.put(b)
		if again := p.get(n); cap(again) != cap(b) {
			t.Fatalf("get(%d) after put: cap %d, want %d", n, cap(again), cap(b))
		}
	}
	if b := p.get(32 << 20); cap(b) != 32<<20 {
		t.Fatalf("oversized frame: cap %d", cap(b))
	}
}
