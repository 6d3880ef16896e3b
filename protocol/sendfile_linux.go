package protocol

import (
	"fmt"
	"net"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// fileSender sends file bytes to a TCP socket with sendfile(2).
type fileSender struct {
	rc       syscall.RawConn
	disabled bool // sendfile failed with an error saying it never will work here
}

func newFileSender(nc net.Conn) *fileSender {
	tc, ok := nc.(*net.TCPConn)
	if !ok {
		return nil
	}
	rc, err := tc.SyscallConn()
	if err != nil {
		return nil
	}
	return &fileSender{rc: rc}
}

// cork sets TCP_CORK. Errors are ignored: corking only saves packets.
func (fs *fileSender) cork(on bool) {
	v := 0
	if on {
		v = 1
	}
	fs.rc.Control(func(fd uintptr) {
		_ = unix.SetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_CORK, v)
	})
}

// sendFile sends n bytes of f from off. It returns how many bytes it sent;
// fewer than n with a nil error means the caller sends the rest itself (f
// was closed, or the kernel will not sendfile from it). An error is the
// socket's: the connection is broken.
func (fs *fileSender) sendFile(f *os.File, off int64, n int) (int, error) {
	if fs.disabled {
		return 0, nil
	}
	frc, err := f.SyscallConn()
	if err != nil {
		return 0, nil
	}
	sent := 0
	var sockErr error // of the socket (or an unreadable file): the connection ends
	// Control holds a reference on f's descriptor: a concurrent Close
	// (segment roll) cannot release the number to another file meanwhile.
	ctlErr := frc.Control(func(ffd uintptr) {
		waitErr := fs.rc.Write(func(sfd uintptr) bool {
			for sent < n {
				m, err := unix.Sendfile(int(sfd), int(ffd), &off, n-sent)
				if m > 0 {
					sent += m
				}
				switch {
				case err == unix.EAGAIN:
					return false // wait until the socket is writable
				case err == unix.EINTR:
					continue
				case err == unix.EINVAL || err == unix.ENOSYS || err == unix.EOPNOTSUPP:
					fs.disabled = true
					return true
				case err != nil:
					sockErr = err
					return true
				case m == 0:
					return true // end of file: the rest comes from the mapping
				}
			}
			return true
		})
		if sockErr == nil {
			sockErr = waitErr
		}
	})
	if ctlErr != nil {
		// f was closed (the segment rolled) before Control could take its
		// reference: nothing was sent from it.
		return 0, nil
	}
	if sockErr != nil {
		return sent, fmt.Errorf("sendfile: %w", sockErr)
	}
	return sent, nil
}
