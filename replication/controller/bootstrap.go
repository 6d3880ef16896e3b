package controller

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/kbroker/kbroker/internal/atomicfile"
	"github.com/kbroker/kbroker/security/sasl/scram"
)

// Bootstrap records, as Kafka's bootstrap.checkpoint written by
// `kafka-storage format --add-scram`: `kbroker format` stores the first
// admin's SCRAM credentials (salted, never the password) in the metadata
// directory, and the controller that initializes the metadata log commits
// them with the cluster id. The file is read on every start and ignored
// once the log has a cluster id.
//
//	{"v":1,"scram":[{"name":"admin","mechanism":1,"salt":"...","storedKey":"...","serverKey":"...","iterations":4096}]}
const bootstrapFile = "bootstrap.json"

type bootstrapV1 struct {
	V     int                         `json:"v"`
	Scram []userScramCredentialRecord `json:"scram"`
}

// WriteBootstrap writes the bootstrap credentials into dataDir (the
// controller's Options.DataDir), replacing earlier ones. It refuses a
// directory that holds a metadata log already: its cluster exists, and
// credentials are then managed with AlterUserScramCredentials.
func WriteBootstrap(dataDir string, creds []scram.Bootstrap) error {
	if _, err := os.Stat(filepath.Join(dataDir, "raft.db")); err == nil {
		return fmt.Errorf("controller: %s already holds a metadata log: the cluster exists; "+
			"manage credentials with AlterUserScramCredentials (kafka-configs --alter --add-config 'SCRAM-SHA-256=[...]' --entity-type users)", dataDir)
	}
	if err := os.MkdirAll(dataDir, 0o755); err != nil {
		return fmt.Errorf("controller: %w", err)
	}
	doc := bootstrapV1{V: 1}
	for _, b := range creds {
		doc.Scram = append(doc.Scram, *newScramRecord(scram.Upsert{User: b.User, Mechanism: b.Mechanism, Credential: b.Credential}))
	}
	data, err := json.Marshal(doc)
	if err != nil {
		return err
	}
	// Durable before format reports success: the first start reads it.
	if err := atomicfile.WriteFile(filepath.Join(dataDir, bootstrapFile), data, 0o600); err != nil {
		return fmt.Errorf("controller: writing bootstrap: %w", err)
	}
	return nil
}

// readBootstrap reads dataDir's bootstrap credentials; none without a file.
func readBootstrap(dataDir string) ([]scram.Bootstrap, error) {
	data, err := os.ReadFile(filepath.Join(dataDir, bootstrapFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("controller: reading bootstrap: %w", err)
	}
	var doc bootstrapV1
	if err := json.Unmarshal(data, &doc); err != nil || doc.V != 1 {
		return nil, fmt.Errorf("controller: %s is not a version 1 bootstrap file (%v)", filepath.Join(dataDir, bootstrapFile), err)
	}
	var out []scram.Bootstrap
	for _, r := range doc.Scram {
		m := scram.MechanismFromCode(r.Mechanism)
		if m == scram.Unknown || r.Name == "" {
			return nil, fmt.Errorf("controller: bootstrap credential %q has mechanism code %d", r.Name, r.Mechanism)
		}
		out = append(out, scram.Bootstrap{User: r.Name, Mechanism: m, Credential: scram.Credential{
			Salt: r.Salt, Iterations: int(r.Iterations), StoredKey: r.StoredKey, ServerKey: r.ServerKey}})
	}
	return out, nil
}
