package storage

import (
	"fmt"
	"github.com/kbroker/kbroker/storage/vfs"
	"os"
	"path/filepath"

	"github.com/kbroker/kbroker/internal/properties"
)

// MetaPropertiesFile is Kafka's per-log-dir identity file: which node and
// cluster the dir belongs to (Kafka's MetaProperties, version 1).
const MetaPropertiesFile = "meta.properties"

// PrepareLogDirs creates the log dirs and checks they are writable, so that
// a wrong path fails at start with a clear message.
func PrepareLogDirs(dirs []string) error {
	for _, dir := range dirs {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return fmt.Errorf("creating %s: %w", dir, err)
		}
		probe := filepath.Join(dir, ".kbroker-write-probe")
		if err := os.WriteFile(probe, nil, 0o644); err != nil {
			return fmt.Errorf("%s is not writable: %w", dir, err)
		}
		os.Remove(probe)
	}
	return nil
}

// WriteMetaProperties writes meta.properties in each log dir, and refuses a
// dir whose meta.properties names another node.id, or another cluster.id
// when clusterID is known: such a dir holds another broker's data.
func WriteMetaProperties(dirs []string, nodeID int32, clusterID string) error {
	for _, dir := range dirs {
		path := filepath.Join(dir, MetaPropertiesFile)
		if err := checkMetaProperties(path, nodeID, clusterID); err != nil {
			return err
		}
		body := fmt.Sprintf("#kbroker\nversion=1\nnode.id=%d\ncluster.id=%s\n", nodeID, clusterID)
		if err := writeFileAtomic(vfs.Default, path, []byte(body)); err != nil {
			return fmt.Errorf("writing %s: %w", path, err)
		}
	}
	return nil
}

// checkMetaProperties compares an existing meta.properties with this node's
// identity. A missing file is a new dir; one that cannot be read is left
// for the write to report.
func checkMetaProperties(path string, nodeID int32, clusterID string) error {
	old, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	props, err := properties.Parse(old)
	if err != nil {
		return fmt.Errorf("reading %s: %w", path, err)
	}
	dir := filepath.Dir(path)
	if id := props["node.id"]; id != "" && id != fmt.Sprint(nodeID) {
		return fmt.Errorf("log dir %s belongs to node.id=%s, not %d", dir, id, nodeID)
	}
	if cid := props["cluster.id"]; cid != "" && clusterID != "" && cid != clusterID {
		return fmt.Errorf("log dir %s belongs to cluster.id=%s, not %s", dir, cid, clusterID)
	}
	return nil
}
