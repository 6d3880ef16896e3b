package config

import (
	"fmt"

	"github.com/kbroker/kbroker/internal/properties"
)

// propertiesCodec decodes Java .properties files (Kafka's server.properties)
// for viper, which dropped its own properties support in 1.20, with the
// reader meta.properties is read with too (internal/properties).
type propertiesCodec struct{}

func (propertiesCodec) Decode(b []byte, out map[string]any) error {
	props, err := properties.Parse(b)
	if err != nil {
		return err
	}
	for k, v := range props {
		out[k] = v
	}
	return nil
}

// Encode is not needed: kbroker never writes config files.
func (propertiesCodec) Encode(map[string]any) ([]byte, error) {
	return nil, fmt.Errorf("config: writing properties is not supported")
}
