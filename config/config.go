// Package config holds kbroker's typed configuration.
package config

// Config is the broker configuration (being written).
type Config struct{}
