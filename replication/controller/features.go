package controller

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Cluster features (KIP-584): each names a range of levels this build
// supports; the cluster's finalized level of each lives in the metadata log
// (FeatureLevel records), is set when the cluster is first initialized and
// changes with UpdateFeatures. ApiVersions v3+ reports both, and clients
// choose behaviour from them (franz-go uses transaction.version 2 only when
// it is finalized).

// Feature is one cluster feature this build knows.
type Feature struct {
	Name     string
	Min, Max int16 // the levels this build supports
	// Bootstrap is the level a new cluster finalizes (Kafka 4.0's default
	// for a fresh cluster); 0 leaves the feature off.
	Bootstrap int16
	// Fixed: UpdateFeatures may not change it here (kraft.version on a
	// static quorum: kbroker's controller.quorum.voters).
	Fixed string
}

// Features is the one list of cluster features. Whoever builds a
// feature's behaviour adds its line here (transaction.version,
// share.version, eligible.leader.replicas.version), with Kafka 4.x's
// levels; nothing else needs to change for ApiVersions and UpdateFeatures.
var Features = []Feature{
	// metadata.version 7 (3.3-IV3) is Kafka 4.0's minimum; 25 is 4.0-IV3.
	{Name: "metadata.version", Min: 7, Max: 25, Bootstrap: 25},
	// kraft.version 1 is KIP-853's dynamic quorum; a static quorum stays 0.
	{Name: "kraft.version", Min: 0, Max: 1, Bootstrap: 0,
		Fixed: "kraft.version cannot change on a static quorum (controller.quorum.voters)"},
	// group.version 1: KIP-848's consumer rebalance protocol.
	{Name: "group.version", Min: 0, Max: 1, Bootstrap: 1},
	// share.version 1: KIP-932 share groups (GA in Kafka 4.2, on by
	// default for new clusters).
	{Name: "share.version", Min: 0, Max: 1, Bootstrap: 1},
	// eligible.leader.replicas.version 1: KIP-966 (Kafka 4.1's default
	// for new clusters; elr.go).
	{Name: ELRFeature, Min: 0, Max: 1, Bootstrap: 1},
	// transaction.version 2: KIP-890 part 2 (an epoch bump per
	// transaction, Produce v12 and TxnOffsetCommit v5 adding their
	// partitions); clients use it only when it is finalized at 2. Level 0
	// also has the transaction coordinator write its state in the old,
	// non-flexible value format (broker/txn).
	{Name: TransactionVersionFeature, Min: 0, Max: 2, Bootstrap: 2},
}

// TransactionVersionFeature is KIP-890's transaction.version.
const TransactionVersionFeature = "transaction.version"

// FeatureByName returns the feature called name.
func FeatureByName(name string) (Feature, bool) {
	i := slices.IndexFunc(Features, func(f Feature) bool { return f.Name == name })
	if i < 0 {
		return Feature{}, false
	}
	return Features[i], true
}

// FinalizedFeatures returns the features finalized at a level above 0 (as
// Kafka lists them) and the index of the last change (-1: none yet).
func (img *Image) FinalizedFeatures() (map[string]int16, int64) {
	out := make(map[string]int16, len(img.Features))
	for name, level := range img.Features {
		if level > 0 {
			out[name] = level
		}
	}
	if len(img.Features) == 0 {
		return out, -1
	}
	return out, img.FeaturesEpoch
}

// featureLevelRecord finalizes a feature at a level (Kafka's
// FeatureLevelRecord); level 0 turns it off.
type featureLevelRecord struct {
	Name  string `json:"name"`
	Level int16  `json:"level"`
}

func (*featureLevelRecord) kind() string { return "FeatureLevel" }

func (r *featureLevelRecord) apply(b *imageBuilder, index uint64) error {
	if r.Name == "" || r.Level < 0 {
		return recordErr("feature %q level %d", r.Name, r.Level)
	}
	b.img.Features = maps.Clone(b.img.Features)
	if b.img.Features == nil {
		b.img.Features = map[string]int16{}
	}
	b.img.Features[r.Name] = r.Level
	b.img.FeaturesEpoch = int64(index)
	return nil
}

// bootstrapFeatures are the records that give the features img has never
// finalized their bootstrap level: at cluster creation, and for clusters
// created before a feature was added to Features.
func bootstrapFeatures(img *Image) []record {
	var recs []record
	for _, f := range Features {
		if _, set := img.Features[f.Name]; !set && f.Bootstrap > 0 {
			recs = append(recs, &featureLevelRecord{Name: f.Name, Level: f.Bootstrap})
		}
	}
	return recs
}

// UpdateFeatures upgrade types (v1+; v0 has AllowDowngrade).
const (
	upgradeTypeUpgrade         int8 = 1
	upgradeTypeSafeDowngrade   int8 = 2
	upgradeTypeUnsafeDowngrade int8 = 3
)

// updateFeatures serves UpdateFeatures as Kafka's FeatureControlManager:
// all or nothing: the first update that cannot apply fails the request
// with its error, top level and (before v2) for every feature asked for.
func (c *controller) updateFeatures(ctx context.Context, req *kmsg.UpdateFeaturesRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.UpdateFeaturesResponse)
	c.mu.Lock()
	defer c.mu.Unlock()
	img := c.fsm.image()
	var recs []record
	var failed *apiError
	seen := map[string]bool{}
	for _, u := range req.FeatureUpdates {
		if seen[u.Feature] {
			failed = newAPIError(kerr.InvalidRequest, "Feature %s was specified more than once.", u.Feature)
			break
		}
		seen[u.Feature] = true
		rec, e := featureUpdate(img, u, req.Version)
		if e != nil {
			failed = e
			break
		}
		if rec != nil {
			recs = append(recs, rec)
		}
	}
	if failed == nil && !req.ValidateOnly && len(recs) > 0 {
		if _, err := c.commit(ctx, recs...); err != nil {
			return nil, err
		}
	}
	if failed != nil {
		resp.ErrorCode, resp.ErrorMessage = failed.code, failed.message()
	}
	if req.Version >= 2 && failed != nil {
		return resp, nil
	}
	for _, u := range req.FeatureUpdates {
		r := kmsg.NewUpdateFeaturesResponseResult()
		r.Feature = u.Feature
		if failed != nil {
			r.ErrorCode, r.ErrorMessage = failed.code, failed.message()
		}
		resp.Results = append(resp.Results, r)
	}
	return resp, nil
}

// featureUpdate checks one update against what this build supports and the
// finalized level; nil record: nothing to change.
func featureUpdate(img *Image, u kmsg.UpdateFeaturesRequestFeatureUpdate, version int16) (record, *apiError) {
	f, ok := FeatureByName(u.Feature)
	invalid := func(why string) *apiError {
		return newAPIError(kerr.InvalidUpdateVersion, "Invalid update version %d for feature %s. %s", u.MaxVersionLevel, u.Feature, why)
	}
	if !ok {
		return nil, invalid("The controller does not support the given feature.")
	}
	if u.MaxVersionLevel < 0 || u.MaxVersionLevel > f.Max || (u.MaxVersionLevel < f.Min && u.MaxVersionLevel != 0) {
		return nil, invalid(fmt.Sprintf("This cluster only supports versions %d-%d.", f.Min, f.Max))
	}
	cur := img.Features[f.Name]
	if u.MaxVersionLevel == cur {
		return nil, nil
	}
	if f.Fixed != "" {
		return nil, invalid(f.Fixed + ".")
	}
	upgradeType := u.UpgradeType
	if version == 0 {
		upgradeType = upgradeTypeUpgrade
		if u.AllowDowngrade {
			upgradeType = upgradeTypeSafeDowngrade
		}
	}
	if upgradeType < upgradeTypeUpgrade || upgradeType > upgradeTypeUnsafeDowngrade {
		return nil, newAPIError(kerr.InvalidRequest, "Unknown upgrade type %d for feature %s.", upgradeType, u.Feature)
	}
	if u.MaxVersionLevel < cur {
		switch {
		case upgradeType == upgradeTypeUpgrade:
			return nil, invalid("Can't downgrade the version of this feature without setting the upgrade type to either safe or unsafe downgrade.")
		case f.Name == "metadata.version":
			return nil, invalid("Downgrading metadata.version is not supported: it could lose metadata.")
		}
	} else if upgradeType != upgradeTypeUpgrade {
		return nil, invalid("Can't upgrade with a downgrade upgrade type.")
	}
	return &featureLevelRecord{Name: f.Name, Level: u.MaxVersionLevel}, nil
}
