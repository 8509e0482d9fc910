//go:build !linux

package ring

import (
	"net"
	"os"
)

// sendfile is Linux-only here; elsewhere records are copied.
func sendfile(net.Conn, *os.File, int64, int) (int, error) { return 0, errNoSendfile }
