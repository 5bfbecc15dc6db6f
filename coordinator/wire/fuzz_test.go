package wire

import (
	"bytes"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/groupquake/groupquake/coordinator/version"
)

// FuzzParseRequest: no request body makes parsing panic, and whatever
// parses is a request of a served key at a served version (or the
// ApiVersions exception).
func FuzzParseRequest(f *testing.F) {
	s := &Server{cfg: Config{Version: version.V4_4_0}, versions: versionsFor(version.V4_4_0, true, false)}
	for _, req := range []kmsg.Request{
		kmsg.NewPtrApiVersionsRequest(), kmsg.NewPtrMetadataRequest(), kmsg.NewPtrProduceRequest(),
		kmsg.NewPtrFetchRequest(), kmsg.NewPtrJoinGroupRequest(), kmsg.NewPtrOffsetCommitRequest(),
	} {
		req.SetVersion(req.MaxVersion())
		f.Add(req.AppendTo(header(req.Key(), req.GetVersion(), 1, req.IsFlexible())))
	}
	f.Add(append(header(18, 99, 1, true), 1, 2, 3))
	f.Add([]byte{0, 3})
	f.Fuzz(func(t *testing.T, body []byte) {
		req, err := s.parseRequest(body)
		if err != nil {
			return
		}
		lo, hi, ok := s.versionRange(req.key)
		if !ok || req.version < lo || req.version > hi && req.key != 18 {
			t.Fatalf("parsed %s v%d, which is not served", kmsg.NameForKey(req.key), req.version)
		}
	})
}

// FuzzReadFrame: any byte stream either yields frames or an error.
func FuzzReadFrame(f *testing.F) {
	f.Add([]byte{0, 0, 0, 2, 1, 2})
	f.Add([]byte{0xff, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, data []byte) {
		r := bytes.NewReader(data)
		for {
			if _, err := readFrame(r); err != nil {
				return
			}
		}
	})
}
