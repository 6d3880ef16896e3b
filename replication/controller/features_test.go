package controller

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// UpdateFeatures decisions, as Kafka's FeatureControlManager makes them.
func TestFeatureUpdate(t *testing.T) {
	img := newEmptyImage()
	img.Features = map[string]int16{"metadata.version": 25, "group.version": 1}
	for _, tc := range []struct {
		name        string
		level       int16
		upgradeType int8
		version     int16
		allowDown   bool
		want        *kerr.Error // nil: accepted
		change      bool
	}{
		{"group.version", 1, upgradeTypeUpgrade, 1, false, nil, false}, // already there: nothing to do
		{"group.version", 0, upgradeTypeSafeDowngrade, 1, false, nil, true},
		{"group.version", 0, upgradeTypeUnsafeDowngrade, 1, false, nil, true},
		{"group.version", 0, upgradeTypeUpgrade, 1, false, kerr.InvalidUpdateVersion, false},
		{"group.version", 0, 0, 0, true, nil, true}, // v0: AllowDowngrade
		{"group.version", 0, 0, 0, false, kerr.InvalidUpdateVersion, false},
		{"group.version", 2, upgradeTypeUpgrade, 1, false, kerr.InvalidUpdateVersion, false},
		{"group.version", 1, 9, 1, false, nil, false}, // unchanged wins over a bad type
		{"group.version", 0, 9, 1, false, kerr.InvalidRequest, false},
		{"metadata.version", 24, upgradeTypeSafeDowngrade, 1, false, kerr.InvalidUpdateVersion, false},
		{"metadata.version", 6, upgradeTypeSafeDowngrade, 1, false, kerr.InvalidUpdateVersion, false},
		{"kraft.version", 1, upgradeTypeUpgrade, 1, false, kerr.InvalidUpdateVersion, false},
		{"kraft.version", 0, upgradeTypeUpgrade, 1, false, nil, false},
		{"no.such.feature", 1, upgradeTypeUpgrade, 1, false, kerr.InvalidUpdateVersion, false},
		{"group.version", -1, upgradeTypeSafeDowngrade, 1, false, kerr.InvalidUpdateVersion, false},
	} {
		u := kmsg.UpdateFeaturesRequestFeatureUpdate{Feature: tc.name, MaxVersionLevel: tc.level, UpgradeType: tc.upgradeType, AllowDowngrade: tc.allowDown}
		rec, e := featureUpdate(img, u, tc.version)
		switch {
		case tc.want == nil && e != nil:
			t.Errorf("%s to %d (type %d, v%d): refused: %s", tc.name, tc.level, tc.upgradeType, tc.version, *e.message())
		case tc.want != nil && (e == nil || e.code != tc.want.Code):
			t.Errorf("%s to %d (type %d, v%d): %v, want %s", tc.name, tc.level, tc.upgradeType, tc.version, e, tc.want.Message)
		case (rec != nil) != tc.change:
			t.Errorf("%s to %d (type %d, v%d): record %v, want a change %v", tc.name, tc.level, tc.upgradeType, tc.version, rec, tc.change)
		}
	}
}

// A new cluster finalizes the bootstrap levels; one that has set a
// feature (even to 0) keeps it.
func TestBootstrapFeatures(t *testing.T) {
	img := newEmptyImage()
	got := map[string]int16{}
	for _, r := range bootstrapFeatures(img) {
		f := r.(*featureLevelRecord)
		got[f.Name] = f.Level
	}
	if len(got) != 5 || got["metadata.version"] != 25 || got["group.version"] != 1 || got["share.version"] != 1 ||
		got[ELRFeature] != 1 || got[TransactionVersionFeature] != 2 {
		t.Fatalf("bootstrap levels %v", got)
	}
	img.Features = map[string]int16{"metadata.version": 25, "group.version": 0, "share.version": 0, ELRFeature: 0, TransactionVersionFeature: 0}
	if recs := bootstrapFeatures(img); len(recs) != 0 {
		t.Fatalf("bootstrap again over set levels: %v", recs)
	}
	finalized, epoch := img.FinalizedFeatures()
	if len(finalized) != 1 || finalized["metadata.version"] != 25 || epoch != 0 {
		t.Fatalf("finalized %v epoch %d: a level of 0 is not listed", finalized, epoch)
	}
}
