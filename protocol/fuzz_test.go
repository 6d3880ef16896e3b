package protocol

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// FuzzParseRequest feeds arbitrary frames to the request decoder: it may
// return an error, never panic.
func FuzzParseRequest(f *testing.F) {
	for _, req := range []kmsg.Request{kmsg.NewPtrApiVersionsRequest(), metadataFor("topic"), kmsg.NewPtrProduceRequest(), kmsg.NewPtrFetchRequest()} {
		for _, v := range []int16{0, 3, req.MaxVersion()} {
			req.SetVersion(v)
			f.Add(appendRequest(nil, 1, "seed", req)[4:])
		}
	}
	if files, err := filepath.Glob("testdata/frames/*"); err == nil {
		for _, name := range files {
			if b, err := os.ReadFile(name); err == nil {
				f.Add(b)
			}
		}
	}
	f.Fuzz(func(t *testing.T, frame []byte) {
		req, err := ParseRequest(frame)
		if err == nil && req.Body == nil {
			t.Fatal("no error and no body")
		}
	})
}
