//go:build !linux

package gateways

import (
	"net"
	"os"
)

func sendfile(net.Conn, *os.File, int64, int) (int, error) { return 0, errNoSendfile }
