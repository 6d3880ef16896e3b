package compat

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// browser is a headless chromium driven through chromedp.
type browser struct {
	t   *testing.T
	ctx context.Context
	out string // where screenshots go
}

// newBrowser starts Debian's chromium. Without it the test fails: the
// console is tested in a real browser or not at all.
func newBrowser(t *testing.T, d time.Duration) *browser {
	t.Helper()
	var path string
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			path = p
			break
		}
	}
	if path == "" {
		t.Fatal("chromium is not installed: the console's browser test needs it " +
			"(apt-get update && apt-get install -y chromium; .ci/run installs it)")
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.Flag("disable-quic", true), chromedp.NoFirstRun,
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true), chromedp.UserDataDir(t.TempDir()), chromedp.WindowSize(1280, 860))
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelBrowser := chromedp.NewContext(actx)
	ctx, cancelTimeout := context.WithTimeout(ctx, d)
	t.Cleanup(func() { cancelTimeout(); cancelBrowser(); cancelAlloc() })
	out := os.Getenv("KBROKER_SCREENSHOT_DIR")
	if out == "" {
		out = filepath.Join("testdata", "out", "console")
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		t.Fatal(err)
	}
	abs, _ := filepath.Abs(out)
	t.Logf("screenshots go to %s", abs)
	return &browser{t: t, ctx: ctx, out: abs}
}

// open loads url and waits until ready (a CSS selector) is visible.
func (b *browser) open(url, ready string) {
	b.t.Helper()
	if err := chromedp.Do(b.ctx, chromedp.Navigate(url), chromedp.WaitVisible(ready)); err != nil {
		b.t.Fatalf("opening %s (waiting for %s): %v", url, ready, err)
	}
}

// texts returns the trimmed text of every element matching sel.
func (b *browser) texts(sel string) []string {
	b.t.Helper()
	js := fmt.Sprintf(`Array.from(document.querySelectorAll(%q)).map(e => e.textContent.trim())`, sel)
	out, err := chromedp.Run(b.ctx, chromedp.Evaluate[[]string](js))
	if err != nil {
		b.t.Fatalf("reading %s: %v", sel, err)
	}
	return out
}

func (b *browser) text(sel string) string {
	b.t.Helper()
	if all := b.texts(sel); len(all) > 0 {
		return all[0]
	}
	b.t.Fatalf("no element %s on the page", sel)
	return ""
}

// intAttr is the integer value of attribute attr of the first element
// matching sel, -1 when there is none.
func (b *browser) intAttr(sel, attr string) int {
	b.t.Helper()
	js := fmt.Sprintf(`(e => e && e.hasAttribute(%q) ? parseInt(e.getAttribute(%q), 10) : -1)(document.querySelector(%q))`, attr, attr, sel)
	n, err := chromedp.Run(b.ctx, chromedp.Evaluate[int](js))
	if err != nil {
		b.t.Fatalf("reading %s[%s]: %v", sel, attr, err)
	}
	return n
}

// shot saves a screenshot of the whole page as name.png.
func (b *browser) shot(name string) {
	b.t.Helper()
	png, err := chromedp.Run(b.ctx, chromedp.FullScreenshot(100))
	if err != nil {
		b.t.Fatalf("screenshot %s: %v", name, err)
	}
	path := filepath.Join(b.out, name+".png")
	if err := os.WriteFile(path, png, 0o644); err != nil {
		b.t.Fatal(err)
	}
	b.t.Logf("screenshot %s", path)
}

// The console in chromium on a live 3-broker cluster: the overview, a
// topic page, a group's lag, the message browser and the lesson view show
// what the cluster holds, and a broker killed shows as under-replicated
// partitions on the overview (updated live) within 15 s.
func TestConsoleInBrowser(t *testing.T) {
	needOwnCluster(t)
	t.Parallel()
	c := startCluster(t, clusterOpts{brokers: 3, metrics: true, flags: replicationFlags()})
	b := newBrowser(t, 2*time.Minute)
	adm := newAdmin(t, c.seeds())
	ctx := ctxTimeout(t, 2*time.Minute)
	topic := newTopic(t, adm, 3, 3, map[string]*string{"min.insync.replicas": kadm.StringPtr("2")})
	fragile := uniqueTopic("console-fragile")
	createTopicAssigned(t, c.seeds(), fragile, []int32{1, 3}, map[string]string{"min.insync.replicas": "2"})
	c.waitTopicEverywhere(topic, 3, 3)
	c.waitTopicEverywhere(fragile, 1, 2)

	// 10, 6 and 4 records in partitions 0, 1, 2; one JSON value to find.
	cl := newClient(t, c.seeds(), kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	for p, n := range []int{10, 6, 4} {
		for i := range n {
			v := fmt.Sprintf("plain-%d-%d", p, i)
			if p == 0 && i == 3 {
				v = `{"order":4711,"item":"kettle"}`
			}
			must(t, cl.ProduceSync(ctx, &kgo.Record{Partition: int32(p), Key: []byte(fmt.Sprint("k", i)), Value: []byte(v)}).FirstErr(), "produce")
		}
	}
	group := uniqueTopic("console-group")
	offs := kadm.Offsets{}
	offs.AddOffset(topic, 0, 7, -1) // lag 3
	offs.AddOffset(topic, 1, 6, -1) // lag 0
	offs.AddOffset(topic, 2, 0, -1) // lag 4
	must(t, adm.CommitAllOffsets(ctx, group, offs), "commit")

	md, err := adm.Metadata(ctx)
	must(t, err, "metadata")
	total := 0
	md.Topics.EachPartition(func(kadm.PartitionDetail) { total++ })
	ui := "http://" + c.node(1).metricsAddr + "/ui"

	b.open(ui+"/", "#brokers")
	if got := b.text("#partitions"); got != fmt.Sprint(total) {
		t.Errorf("overview: %s partitions, want %d", got, total)
	}
	if got := b.text("#under-replicated"); got != "0" {
		t.Errorf("overview: %s under-replicated before any failure", got)
	}
	if got := len(b.texts("#brokers tbody tr")); got != 3 {
		t.Errorf("overview lists %d brokers, want 3", got)
	}
	b.shot("overview")

	b.open(ui+"/topics/"+topic, "#partitions")
	if got := b.text("#partition-count"); got != "3" {
		t.Errorf("topic page: %s partitions, want 3", got)
	}
	for i, isr := range b.texts(`#partitions [data-k="isr"]`) {
		if isr != "1,2,3" {
			t.Errorf("topic page: partition %d ISR %q, want 1,2,3", i, isr)
		}
	}
	if got := strings.Join(b.texts(`#partitions [data-k="hw"]`), " "); got != "10 6 4" {
		t.Errorf("topic page: high watermarks %q, want 10 6 4", got)
	}
	b.shot("topic")

	b.open(ui+"/groups/"+group, "#lag")
	if got := strings.Join(b.texts(`#lag [data-k="lag"]`), " "); got != "3 0 4" {
		t.Errorf("group page: lags %q, want 3 0 4", got)
	}
	if got := b.text("#total-lag"); got != "7" {
		t.Errorf("group page: total lag %s, want 7", got)
	}
	waitFor(t, 20*time.Second, "two lag samples for the chart", func() error {
		var h struct{ T []int64 }
		resp, err := http.Get(ui + "/api/groups/" + group + "/lag")
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		if err := json.NewDecoder(resp.Body).Decode(&h); err != nil || len(h.T) < 2 {
			return fmt.Errorf("%d samples (%v)", len(h.T), err)
		}
		return nil
	})
	waitFor(t, 10*time.Second, "the page's own poll to draw two lag samples", func() error {
		if n := b.intAttr("#lag-chart", "data-points"); n < 2 {
			return fmt.Errorf("the chart shows %d samples", n)
		}
		return nil
	})
	b.shot("group")

	b.open(ui+"/messages?topic="+topic+"&partition=0&offset=0&limit=50&view=json", "#records")
	values := strings.Join(b.texts(`#records pre[data-k="value"]`), "\n")
	if !strings.Contains(values, `"order": 4711`) || !strings.Contains(values, "plain-0-9") {
		t.Errorf("message browser does not show the produced values:\n%s", values)
	}
	if got := b.text("#record-count"); got != "10 records." {
		t.Errorf("message browser: %q", got)
	}
	b.shot("messages")

	b.open(ui+"/", "#brokers")
	c.node(3).kill9()
	killed := time.Now()
	var under string
	for time.Since(killed) < 15*time.Second {
		if under = b.text("#under-replicated"); under != "0" {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if under == "0" {
		t.Fatalf("15 s after broker 3 was killed the overview still shows no under-replicated partition")
	}
	t.Logf("the overview showed %s under-replicated partitions %v after the kill", under, time.Since(killed).Round(100*time.Millisecond))
	waitFor(t, 10*time.Second, "broker 3 marked down in the brokers table", func() error {
		if n := len(b.texts(`#brokers tr.down[data-broker="3"]`)); n != 1 {
			return fmt.Errorf("not marked (%s down)", b.text("#brokers-down"))
		}
		return nil
	})
	b.shot("overview-broker-down")

	b.open(ui+"/risk", "#acksall")
	refused := strings.Join(b.texts("#acksall tbody tr"), "\n")
	if !strings.Contains(refused, fragile) || !strings.Contains(refused, "NOT_ENOUGH_REPLICAS") {
		t.Errorf("the lesson view does not list %s as refusing acks=all:\n%s", fragile, refused)
	}
	if lose := strings.Join(b.texts("#acks1 tbody tr"), "\n"); !strings.Contains(lose, fragile) {
		t.Errorf("the lesson view does not list %s as losing acks=1 writes:\n%s", fragile, lose)
	}
	b.shot("risk")
}
