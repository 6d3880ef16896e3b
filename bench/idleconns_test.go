package main

import "testing"

func TestHoldGrowthSumsProcesses(t *testing.T) {
	before := []procHold{{Anon: 100, RSS: 1000, Sockets: 2}, {Anon: 50, RSS: 500, Sockets: 1}}
	after := []procHold{{Anon: 1100, RSS: 3000, Sockets: 7}, {Anon: 1050, RSS: 1500, Sockets: 6}}
	c := holdGrowth(before, after, 10)
	if c.Anon != 2000 || c.RSS != 3000 || c.Sockets != 10 || c.AnonPerConn() != 200 || c.RSSPerConn() != 300 {
		t.Fatalf("got %+v (%.0f, %.0f per connection)", c, c.AnonPerConn(), c.RSSPerConn())
	}
	if (idleCost{}).AnonPerConn() != 0 {
		t.Fatal("no connections must cost 0, not NaN")
	}
}
