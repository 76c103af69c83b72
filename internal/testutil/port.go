package testutil

import (
	"net"
	"strconv"
	"syscall"
	"testing"
)

// ReservePort returns a loopback address, "127.0.0.1:port". No other socket
// binding port 0 gets its port until the test ends. ReservePort holds a
// socket bound there with SO_REUSEADDR, and never listening. The kernel
// hands out no port such a socket holds. A listener with SO_REUSEADDR, as
// net.Listen makes, binds it freely. A port from a listener closed at once
// may be handed out again before the test binds it.
func ReservePort(t testing.TB) string {
	t.Helper()
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(reservePort(t)))
}

// reservePort is ReservePort's port number.
func reservePort(t testing.TB) int {
	t.Helper()
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatalf("testutil: socket: %v", err)
	}
	t.Cleanup(func() { syscall.Close(fd) })
	if err := syscall.SetsockoptInt(fd, syscall.SOL_SOCKET, syscall.SO_REUSEADDR, 1); err != nil {
		t.Fatalf("testutil: SO_REUSEADDR: %v", err)
	}
	if err := syscall.Bind(fd, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		t.Fatalf("testutil: bind: %v", err)
	}
	sa, err := syscall.Getsockname(fd)
	if err != nil {
		t.Fatalf("testutil: getsockname: %v", err)
	}
	return sa.(*syscall.SockaddrInet4).Port
}
