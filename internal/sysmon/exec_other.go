//go:build !unix

package sysmon

// KeepAwake does nothing where the process cannot re-execute itself.
func KeepAwake() {}
