package tierd

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/aerostream/aerostream/tierd/segobj"
)

// Object keys, below the provider's configured prefix (tierd/segobj):
//
//	<topic>/<partition>/<base offset, 20 digits>-<segment id>.seg
//	<topic>/<partition>/manifest.json
//
// and, written by earlier versions and still read, a segment as three
// objects <...>.log, <...>.index and <...>.timeindex (DESIGN §4).

// segmentExts are the local files of a segment, as staged.
var segmentExts = []string{".index", ".timeindex", ".log"}

func segmentKey(topic string, partition int32, base int64, id, ext string) string {
	return fmt.Sprintf("%s/%d/%020d-%s%s", topic, partition, base, id, ext)
}

func manifestKey(topic string, partition int32) string {
	return fmt.Sprintf("%s/%d/manifest.json", topic, partition)
}

// parsedKey is what an object key names.
type parsedKey struct {
	topic     string
	partition int32
	base      int64
	id        string
	ext       string // ".seg", ".log", ".index", ".timeindex", or "manifest.json"
}

// parseKey reads an object key written by tierd; ok is false for anything
// else (gc leaves foreign objects alone).
func parseKey(key string) (parsedKey, bool) {
	parts := strings.Split(key, "/")
	if len(parts) != 3 {
		return parsedKey{}, false
	}
	p, err := strconv.ParseInt(parts[1], 10, 32)
	if err != nil || p < 0 {
		return parsedKey{}, false
	}
	k := parsedKey{topic: parts[0], partition: int32(p)}
	if parts[2] == "manifest.json" {
		k.ext = parts[2]
		return k, true
	}
	name := parts[2]
	dot := strings.IndexByte(name, '.')
	if dot < 0 || len(name) < 22 || name[20] != '-' {
		return parsedKey{}, false
	}
	k.ext = name[dot:]
	switch k.ext {
	case segobj.Ext, segobj.LegacyLogExt, segobj.LegacyIndexExt, segobj.LegacyTimeIndexExt:
	default:
		return parsedKey{}, false
	}
	base, err := strconv.ParseInt(name[:20], 10, 64)
	if err != nil {
		return parsedKey{}, false
	}
	k.base, k.id = base, name[21:dot]
	return k, k.id != ""
}
