package compat

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/kbroker/kbroker/internal/testsupport"
)

// The console of a secured broker asks for a login and reads as the
// viewer: the broker authenticates the Kafka user and password (SASL on
// its SASL_SSL listener, here SCRAM-SHA-512 and -256 users) and its ACLs
// decide what each viewer sees. No login or a wrong password: 401 with a
// Basic challenge. admin (a super user) sees every topic; alice, who may
// describe one topic, sees that one and is refused the other (403).
func TestConsoleLoginHonoursACLs(t *testing.T) {
	port := testsupport.FreePorts(t, 1)[0]
	sc := startSecureCluster(t, secureOpts{properties: []string{fmt.Sprintf("metrics.listen=127.0.0.1:%d", port)}})
	adm := sc.admin()
	mine, theirs := uniqueTopic("console-mine"), uniqueTopic("console-theirs")
	newTopicNamed(t, adm, mine)
	newTopicNamed(t, adm, theirs)
	upsertSCRAM(t, adm, "alice", alicePassword, kadm.ScramSha256)
	createACLs(t, adm, kadm.NewACLs().Allow("User:alice").Topics(mine).Operations(kadm.OpDescribe, kadm.OpDescribeConfigs))
	createACLs(t, adm, kadm.NewACLs().Allow("User:alice").Clusters().Operations(kadm.OpDescribe))
	sc.waitTopicVisibleEverywhere(mine, sc.scram("alice", alicePassword, 256))
	ui := fmt.Sprintf("http://127.0.0.1:%d/ui", port)
	get := func(path, user, pass string) (int, string, string) {
		t.Helper()
		status, h, body := testsupport.Get(t, ui+path, user, pass)
		return status, h.Get("WWW-Authenticate"), body
	}
	for _, who := range [][2]string{{"", ""}, {"alice", "not-it"}, {"admin", "not-it"}} {
		status, challenge, _ := get("/topics", who[0], who[1])
		if status != http.StatusUnauthorized || !strings.HasPrefix(challenge, "Basic ") {
			t.Errorf("user %q: status %d, challenge %q; want 401 and a Basic challenge", who[0], status, challenge)
		}
	}
	waitFor(t, 10*time.Second, "admin's topic list", func() error {
		status, _, body := get("/topics", "admin", adminPassword)
		if status != 200 || !strings.Contains(body, `data-topic="`+mine+`"`) || !strings.Contains(body, `data-topic="`+theirs+`"`) {
			return fmt.Errorf("status %d", status)
		}
		return nil
	})
	status, _, body := get("/topics", "alice", alicePassword)
	if status != 200 || !strings.Contains(body, `data-topic="`+mine+`"`) || strings.Contains(body, theirs) {
		t.Errorf("alice's topic list: status %d, %s shown: %v, %s shown: %v", status, mine,
			strings.Contains(body, mine), theirs, strings.Contains(body, theirs))
	}
	if status, _, body := get("/topics/"+mine, "alice", alicePassword); status != 200 || !strings.Contains(body, `id="partition-count">1<`) {
		t.Errorf("alice's page of %s: status %d", mine, status)
	}
	if status, _, body := get("/topics/"+theirs, "alice", alicePassword); status != http.StatusForbidden || !strings.Contains(body, "TOPIC_AUTHORIZATION_FAILED") {
		t.Errorf("alice's page of %s: status %d, want 403 TOPIC_AUTHORIZATION_FAILED\n%s", theirs, status, body)
	}
	if status, _, body := get("/messages?topic="+mine, "alice", alicePassword); status != http.StatusForbidden || !strings.Contains(body, "TOPIC_AUTHORIZATION_FAILED") {
		t.Errorf("alice browses %s without READ: status %d, want 403\n%s", mine, status, body)
	}
	if logs := sc.nodes[0].logs(); !strings.Contains(logs, `msg="console login refused" component=console user=alice`) || strings.Contains(logs, "not-it") {
		t.Error("the refused console login is not logged, or its password is")
	}
}
