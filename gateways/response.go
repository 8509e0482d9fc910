package gateways

import (
	"bufio"
	"errors"
	"io"
	"log/slog"
	"net"
	"os"

	"github.com/aerostream/aerostream/logstore/ring"
)

// Response is what a Session hands the write goroutine: a sequence of byte
// parts and file ranges written back to back. File ranges go to the socket
// with sendfile(2), so record bytes of a segment file never pass through
// user space. The protocol's own framing (a size prefix) is part of the
// first byte part; Len tells the protocol what size to write there.
type Response struct {
	parts      []part
	size       int
	releases   []func()
	closeAfter bool
}

type part struct {
	b   []byte
	f   *os.File
	pos int64
	n   int
}

// NewResponse returns a Response holding b.
func NewResponse(b []byte) *Response {
	r := &Response{}
	r.AddBytes(b)
	return r
}

// AddBytes appends b. The Response keeps b until it is written.
func (r *Response) AddBytes(b []byte) {
	if len(b) == 0 {
		return
	}
	r.parts = append(r.parts, part{b: b})
	r.size += len(b)
}

// AddFile appends n bytes of f from pos. f must stay open until the
// Response is released (see OnRelease).
func (r *Response) AddFile(f *os.File, pos int64, n int) {
	if n <= 0 {
		return
	}
	r.parts = append(r.parts, part{f: f, pos: pos, n: n})
	r.size += n
}

// Append moves other's parts and release functions to the end of r; other
// must not be used afterwards.
func (r *Response) Append(other *Response) {
	r.parts = append(r.parts, other.parts...)
	r.size += other.size
	r.releases = append(r.releases, other.releases...)
	r.closeAfter = r.closeAfter || other.closeAfter
	*other = Response{}
}

// Len is the number of bytes the Response writes.
func (r *Response) Len() int { return r.size }

// WriteTo writes the Response to w, copying file parts through a buffer
// (the connection writer uses sendfile instead). It does not release the
// Response.
func (r *Response) WriteTo(w io.Writer) (int64, error) {
	var n int64
	for _, p := range r.parts {
		if p.f == nil {
			k, err := w.Write(p.b)
			n += int64(k)
			if err != nil {
				return n, err
			}
			continue
		}
		k, err := ring.CopyRange(w, p.f, p.pos, p.n)
		n += int64(k)
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

// OnRelease registers fn to run once the Response has been written, or
// dropped because the connection died.
func (r *Response) OnRelease(fn func()) { r.releases = append(r.releases, fn) }

// CloseAfter asks for the connection to be closed once this Response is
// written (Kafka closes a connection after a failed acks=0 produce, the only
// way to tell such a producer that something went wrong).
func (r *Response) CloseAfter() { r.closeAfter = true }

// Reset empties a released Response for reuse, keeping the room its parts
// took: a pusher that sends many alike responses allocates none per push.
// Nothing may hold r when it is reset.
func (r *Response) Reset() {
	clear(r.parts) // no file or buffer stays reachable through r
	*r = Response{parts: r.parts[:0], releases: r.releases[:0]}
}

// release runs the release functions, taking them off r first: one may
// hand r on to be Reset and reused, so r is not touched after them.
func (r *Response) release() {
	fns := r.releases
	r.releases = nil
	for _, fn := range fns {
		fn()
	}
}

// connWriter is the write goroutine's state.
type connWriter struct {
	srv *Server
	nc  net.Conn
	log *slog.Logger
	bw  *bufio.Writer
	iov [][]byte // writev's, reused
}

// loop writes responses in order until out is closed, and pushed ones
// (Conn.Push) as they come. After a write error it closes the socket
// (which ends the read goroutine) and only releases what is still queued.
func (w *connWriter) loop(out <-chan *Response, push <-chan *Response, cancel func()) {
	w.bw = bufio.NewWriterSize(w.nc, 64<<10)
	var failed error
	for {
		var r *Response
		select {
		case r0, ok := <-out:
			if !ok {
				w.drainPushed(push)
				return
			}
			r = r0
		case r = <-push:
		}
		if failed == nil {
			failed = w.write(r)
			// Flush when nothing else is queued, so small responses
			// to pipelined requests share a write.
			if failed == nil && (len(out)+len(push) == 0 || r.closeAfter) {
				failed = w.bw.Flush()
			}
			if failed == nil && r.closeAfter {
				failed = errCloseAfter
			}
			if failed != nil {
				if !errors.Is(failed, errCloseAfter) && !quietClose(failed) {
					w.log.Info("write failed, closing connection", "err", failed)
				}
				cancel()
				_ = w.nc.Close()
			}
		}
		r.release()
	}
}

// drainPushed releases what was pushed but not written: the connection is
// closing, and a pusher that sees the writer gone releases its own.
func (w *connWriter) drainPushed(push <-chan *Response) {
	for {
		select {
		case r := <-push:
			r.release()
		default:
			return
		}
	}
}

var errCloseAfter = errors.New("closed after response")

func (w *connWriter) write(r *Response) error {
	for i := 0; i < len(r.parts); i++ {
		p := r.parts[i]
		if p.f == nil {
			j, n := i+1, len(p.b)
			for ; j < len(r.parts) && r.parts[j].f == nil; j++ {
				n += len(r.parts[j].b)
			}
			if j-i > 1 && n > w.bw.Available() {
				if err := w.writev(r.parts[i:j]); err != nil {
					return err
				}
			} else {
				for _, q := range r.parts[i:j] {
					if _, err := w.bw.Write(q.b); err != nil {
						return err
					}
				}
			}
			i = j - 1
			continue
		}
		if p.n <= copyBelowBytes {
			// A small range costs less read into the write buffer than
			// sent on its own: sendfile(2) would need the buffered bytes
			// flushed first, so each part would cost two syscalls and a
			// TCP segment of its own, where a pread shares the one write
			// with the rest of the response.
			if err := w.copyInto(p); err != nil {
				return err
			}
			continue
		}
		if err := w.bw.Flush(); err != nil {
			return err
		}
		sent, copied, err := ring.SendRange(w.nc, p.f, p.pos, p.n)
		w.srv.stats.sendfileBytes.Add(int64(sent))
		w.srv.stats.copiedBytes.Add(int64(copied))
		if err != nil {
			return err
		}
	}
	return nil
}

// writev sends a run of byte parts too large for the write buffer (a cold
// read's chunk slices, each partition's header between them) in one
// writev(2), after what is buffered: through the buffer, each large part
// cost a 64 KiB copy into it and two writes.
func (w *connWriter) writev(run []part) error {
	if err := w.bw.Flush(); err != nil {
		return err
	}
	for _, q := range run {
		w.iov = append(w.iov, q.b)
	}
	bufs := net.Buffers(w.iov)
	_, err := bufs.WriteTo(w.nc)
	clear(w.iov) // no response's bytes stay reachable through w
	w.iov = w.iov[:0]
	return err
}

// copyBelowBytes is the size under which a file part is read into the
// connection's write buffer rather than sent with sendfile(2). Measured
// with `aerostream bench` at 50k msg/s (fetches of a few KiB per
// partition): the copy halves the syscalls per Fetch response. It must not
// exceed the write buffer (64 KiB).
const copyBelowBytes = 16 << 10

// copyInto reads a small file part straight into the write buffer.
func (w *connWriter) copyInto(p part) error {
	if w.bw.Available() < p.n {
		if err := w.bw.Flush(); err != nil {
			return err
		}
	}
	buf := w.bw.AvailableBuffer()[:p.n]
	k, err := p.f.ReadAt(buf, p.pos)
	if k < p.n {
		if err == nil || err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return err
	}
	w.srv.stats.copiedBytes.Add(int64(p.n))
	_, err = w.bw.Write(buf)
	return err
}
