package gateways

import (
	"io"
	"net"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// sendfile sends n bytes of f from pos with sendfile(2), through the
// connection's poller: EAGAIN parks the goroutine until the socket drains
// and the write deadline applies. It uses the offset form of the call, so
// the file's own position (shared by every reader of a segment) never moves.
func sendfile(nc net.Conn, f *os.File, pos int64, n int) (int, error) {
	sc, ok := nc.(syscall.Conn)
	if !ok {
		return 0, errNoSendfile
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return 0, errNoSendfile
	}
	fc, err := f.SyscallConn()
	if err != nil {
		return 0, errNoSendfile
	}
	var (
		sent int
		serr error
	)
	cerr := fc.Control(func(ffd uintptr) {
		off := pos
		werr := rc.Write(func(sfd uintptr) bool {
			for sent < n {
				w, err := unix.Sendfile(int(sfd), int(ffd), &off, min(n-sent, 1<<30))
				if w > 0 {
					sent += w
				}
				switch {
				case err == unix.EAGAIN:
					return false // wait for the socket to drain
				case err == unix.EINTR:
					continue
				case err != nil:
					serr = os.NewSyscallError("sendfile", err)
					return true
				case w == 0:
					serr = io.ErrUnexpectedEOF // the file ends before the range does
					return true
				}
			}
			return true
		})
		if serr == nil {
			serr = werr
		}
	})
	if serr == nil {
		serr = cerr
	}
	return sent, serr
}
