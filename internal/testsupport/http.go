package testsupport

import (
	"io"
	"net/http"
	"testing"
)

// Get fetches url, with HTTP Basic credentials when user is not "", and
// returns the status, the headers and the body; a transport error fails
// the test.
func Get(tb testing.TB, url, user, pass string) (int, http.Header, string) {
	tb.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		tb.Fatal(err)
	}
	if user != "" {
		req.SetBasicAuth(user, pass)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		tb.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		tb.Fatalf("reading %s: %v", url, err)
	}
	return resp.StatusCode, resp.Header, string(b)
}
