package kafka

import (
	"encoding/binary"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// FuzzRequestDecode feeds arbitrary frames to the gateway's request
// decoding (header, flexible-header tags, body) and, whatever key the frame
// names, to that key's kmsg decoder at that version, served or not: none may
// panic. A frame that decodes must re-encode to a frame that decodes.
//
// The seed corpus (testdata/fuzz/FuzzRequestDecode) holds a request of every
// served key at every served version.
func FuzzRequestDecode(f *testing.F) {
	for _, seed := range seedFrames() {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, frame []byte) {
		h, req, err := parseRequest(frame)
		if err == nil {
			if req == nil {
				t.Fatal("no error and no request")
			}
			again := appendRequestFrame(nil, h, req)
			if _, _, err := parseRequest(again); err != nil {
				t.Fatalf("%s v%d decoded, then its re-encoding did not: %v", kmsg.NameForKey(h.key), h.version, err)
			}
		}
		if len(frame) >= 8 {
			key := int16(binary.BigEndian.Uint16(frame))
			version := int16(binary.BigEndian.Uint16(frame[2:]))
			if r := kmsg.RequestForKey(key); r != nil && version >= 0 && version <= r.MaxVersion() {
				_, _ = decodeBody(r, version, frame[8:])
			}
		}
	})
}

// appendRequestFrame encodes a request frame (without the size prefix) as
// a client would: header v1 or v2, then the body.
func appendRequestFrame(dst []byte, h header, req kmsg.Request) []byte {
	dst = binary.BigEndian.AppendUint16(dst, uint16(h.key))
	dst = binary.BigEndian.AppendUint16(dst, uint16(h.version))
	dst = binary.BigEndian.AppendUint32(dst, uint32(h.corr))
	dst = binary.BigEndian.AppendUint16(dst, uint16(len(h.clientID)))
	dst = append(dst, h.clientID...)
	req.SetVersion(h.version)
	if req.IsFlexible() {
		dst = append(dst, 0)
	}
	return req.AppendTo(dst)
}

// seedFrames is a request of every served key at every served version.
func seedFrames() [][]byte {
	var out [][]byte
	for key, ak := range apiKeys {
		for v := ak.min; v <= ak.max; v++ {
			req := kmsg.RequestForKey(key)
			req.SetVersion(v)
			out = append(out, appendRequestFrame(nil, header{key: key, version: v, corr: 1, clientID: "fuzz"}, req))
		}
	}
	return out
}

// TestSeedFramesDecode keeps the seeds honest: each is a valid request.
func TestSeedFramesDecode(t *testing.T) {
	for _, s := range seedFrames() {
		if _, _, err := parseRequest(s); err != nil {
			t.Errorf("seed does not decode: %v", err)
		}
	}
}
