package broker

import "github.com/twmb/franz-go/pkg/kmsg"

// feature is a cluster feature ApiVersions v3+ lists (KIP-584): the range
// of levels this broker supports, and the level the cluster runs at.
type feature struct {
	name               string
	minLevel, maxLevel int16 // supported
	finalized          int16 // the cluster's level
}

// features lists the finalized features. transaction.version 2 is KIP-890
// part 2 (an epoch bump per transaction, Produce v12 and TxnOffsetCommit
// v5 adding their partitions): franz-go and the Java client use it only
// when the cluster finalizes it. Other features join this list.
func features() []feature {
	return []feature{
		{name: "transaction.version", minLevel: 0, maxLevel: 2, finalized: 2},
	}
}

// finalizedFeaturesEpoch is the epoch ApiVersions gives the finalized
// features: they never change, so any non-negative value; -1 would tell
// clients that the finalized features are unknown.
const finalizedFeaturesEpoch = 1

// addFeatures fills the feature fields of an ApiVersions v3+ response.
func addFeatures(resp *kmsg.ApiVersionsResponse) {
	if resp.Version < 3 {
		return
	}
	resp.FinalizedFeaturesEpoch = finalizedFeaturesEpoch
	for _, f := range features() {
		sf := kmsg.NewApiVersionsResponseSupportedFeature()
		sf.Name, sf.MinVersion, sf.MaxVersion = f.name, f.minLevel, f.maxLevel
		resp.SupportedFeatures = append(resp.SupportedFeatures, sf)
		ff := kmsg.NewApiVersionsResponseFinalizedFeature()
		ff.Name, ff.MinVersionLevel, ff.MaxVersionLevel = f.name, f.finalized, f.finalized
		resp.FinalizedFeatures = append(resp.FinalizedFeatures, ff)
	}
}
