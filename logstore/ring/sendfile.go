package ring

import (
	"errors"
	"io"
	"net"
	"os"
	"sync"
)

// errNoSendfile: the connection or platform cannot sendfile; copy instead.
var errNoSendfile = errors.New("sendfile not available")

// SendRange writes n bytes of f from pos to nc: with sendfile(2) where it
// can, so hot segment bytes go from the page cache to the socket without a
// user-space copy, and through a pooled buffer for whatever sendfile did not
// send (a connection without a descriptor, a file system that refuses).
func SendRange(nc net.Conn, f *os.File, pos int64, n int) (sent, copied int, err error) {
	sent, err = sendfile(nc, f, pos, n)
	if err == nil {
		return sent, 0, nil
	}
	if errors.Is(err, os.ErrDeadlineExceeded) || errors.Is(err, net.ErrClosed) || errors.Is(err, io.ErrUnexpectedEOF) {
		// The socket is gone or the file is short: copying would fail
		// the same way.
		return sent, 0, err
	}
	copied, err = CopyRange(nc, f, pos+int64(sent), n-sent)
	return sent, copied, err
}

var copyBufs = sync.Pool{New: func() any {
	b := make([]byte, 256<<10)
	return &b
}}

// CopyRange is the fallback: ReadAt into a pooled buffer, then write.
func CopyRange(w io.Writer, f *os.File, pos int64, n int) (int, error) {
	bp := copyBufs.Get().(*[]byte)
	defer copyBufs.Put(bp)
	buf := *bp
	done := 0
	for done < n {
		k := min(len(buf), n-done)
		r, err := f.ReadAt(buf[:k], pos+int64(done))
		if r < k {
			if err == nil || err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return done, err
		}
		if _, err := w.Write(buf[:k]); err != nil {
			return done, err
		}
		done += k
	}
	return done, nil
}
