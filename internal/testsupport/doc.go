// Package testsupport holds the helpers that tests of several packages
// share: free loopback ports, a manual clock, test-scoped contexts,
// building the kbroker binary, and raw Kafka requests. Only _test.go files
// import it. It imports nothing of kbroker's, so any package's tests may use
// it.
package testsupport
