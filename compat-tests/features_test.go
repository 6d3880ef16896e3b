package compat

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"
)

// ApiVersions v3+ lists the cluster's features as Kafka 4.x does
// (metadata.version 4.0-IV3, group.version 1, share.version 1,
// eligible.leader.replicas.version 1 and transaction.version 2 finalized; kraft.version
// supported, at 0 on a static quorum so not finalized), and UpdateFeatures
// changes them through the metadata log: an unknown feature or a level out
// of range is INVALID_UPDATE_VERSION (sarama TestFuncAdminUpdateFeatures),
// a downgrade needs a downgrade upgrade type, metadata.version is never
// downgraded. Issue 21.
func TestFeatures(t *testing.T) {
	tg := singleNode(t)
	cl := newClient(t, tg.seeds)
	ctx := ctxTimeout(t, 30*time.Second)

	supported, finalized := apiVersionFeatures(ctx, t, cl)
	if supported["metadata.version"] != [2]int16{7, 25} || supported["group.version"] != [2]int16{0, 1} || supported["kraft.version"] != [2]int16{0, 1} ||
		supported["share.version"] != [2]int16{0, 1} || supported["eligible.leader.replicas.version"] != [2]int16{0, 1} ||
		supported["transaction.version"] != [2]int16{0, 2} {
		t.Errorf("supported features %v", supported)
	}
	if finalized["metadata.version"] != 25 || finalized["group.version"] != 1 || finalized["share.version"] != 1 ||
		finalized["eligible.leader.replicas.version"] != 1 || finalized["transaction.version"] != 2 || len(finalized) != 5 {
		t.Errorf("finalized features %v, want metadata.version 25, group.version 1, share.version 1, eligible.leader.replicas.version 1 and transaction.version 2", finalized)
	}
	v3 := kversion.Stable()
	v3.SetMaxKeyVersion(18, 3)
	if s, _ := apiVersionFeatures(ctx, t, newClient(t, tg.seeds, kgo.MaxVersions(v3))); len(s) != 1 {
		t.Errorf("ApiVersions v3 lists supported features %v, want only metadata.version (the others' minimum is 0)", s)
	}

	update := func(validateOnly bool, name string, level int16, upgradeType int8) error {
		req := kmsg.NewPtrUpdateFeaturesRequest()
		u := kmsg.NewUpdateFeaturesRequestFeatureUpdate()
		u.Feature, u.MaxVersionLevel, u.UpgradeType = name, level, upgradeType
		req.FeatureUpdates, req.ValidateOnly, req.TimeoutMillis = []kmsg.UpdateFeaturesRequestFeatureUpdate{u}, validateOnly, 15000
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			return err
		}
		return kerr.ErrorForCode(resp.ErrorCode)
	}
	for _, bad := range []struct {
		name        string
		level       int16
		upgradeType int8
	}{
		{"sarama.unsupported.feature", 1, 1},
		{"group.version", 2, 1},     // above what is supported
		{"group.version", 0, 1},     // a downgrade asked as an upgrade
		{"metadata.version", 24, 2}, // never downgraded
		{"kraft.version", 1, 1},     // static quorum
	} {
		if err := update(false, bad.name, bad.level, bad.upgradeType); err != kerr.InvalidUpdateVersion {
			t.Errorf("UpdateFeatures %s to %d (type %d): %v, want INVALID_UPDATE_VERSION", bad.name, bad.level, bad.upgradeType, err)
		}
	}
	must(t, update(true, "group.version", 0, 2), "validate-only safe downgrade of group.version")
	if _, f := apiVersionFeatures(ctx, t, cl); f["group.version"] != 1 {
		t.Fatalf("a validate-only update changed group.version to %d", f["group.version"])
	}
	must(t, update(false, "group.version", 0, 2), "safe downgrade of group.version")
	if _, f := apiVersionFeatures(ctx, t, cl); f["group.version"] != 0 {
		t.Fatalf("group.version is finalized at %d after the downgrade to 0", f["group.version"])
	}
	must(t, update(false, "group.version", 1, 1), "upgrade of group.version")
	if _, f := apiVersionFeatures(ctx, t, cl); f["group.version"] != 1 {
		t.Fatalf("group.version is finalized at %d after the upgrade to 1", f["group.version"])
	}
}

// apiVersionFeatures asks a broker for its supported ([min, max]) and
// finalized features.
func apiVersionFeatures(ctx context.Context, t *testing.T, cl *kgo.Client) (map[string][2]int16, map[string]int16) {
	t.Helper()
	resp, err := kmsg.NewPtrApiVersionsRequest().RequestWith(ctx, cl)
	must(t, err, "ApiVersions")
	if resp.Version < 3 {
		t.Fatalf("ApiVersions answered v%d", resp.Version)
	}
	supported, finalized := map[string][2]int16{}, map[string]int16{}
	for _, f := range resp.SupportedFeatures {
		supported[f.Name] = [2]int16{f.MinVersion, f.MaxVersion}
	}
	for _, f := range resp.FinalizedFeatures {
		finalized[f.Name] = f.MaxVersionLevel
	}
	if len(finalized) > 0 && resp.FinalizedFeaturesEpoch < 0 {
		t.Errorf("finalized features %v with epoch %d", finalized, resp.FinalizedFeaturesEpoch)
	}
	return supported, finalized
}
