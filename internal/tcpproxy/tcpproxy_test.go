package tcpproxy

import (
	"io"
	"net"
	"testing"

	"github.com/stretchr/testify/require"
)

// echo serves one-line answers naming itself.
func echo(t *testing.T, name string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				_, _ = io.WriteString(c, name)
			}()
		}
	}()
	return ln.Addr().String()
}

func read(t *testing.T, addr string) (string, error) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return "", err
	}
	defer c.Close()
	b, err := io.ReadAll(c)
	return string(b), err
}

// Paused, the proxy refuses connections on its address; resumed, it
// forwards again on the same one; switched, to the other server.
func TestPauseResumeAndSwitch(t *testing.T) {
	p, err := Start(echo(t, "a"))
	require.NoError(t, err)
	defer p.Close()
	got, err := read(t, p.Addr())
	require.NoError(t, err)
	require.Equal(t, "a", got)

	require.NoError(t, p.Pause())
	_, err = read(t, p.Addr())
	require.Error(t, err, "refused while paused")
	require.NoError(t, p.Resume())
	got, err = read(t, p.Addr())
	require.NoError(t, err)
	require.Equal(t, "a", got)

	p.SetTarget(echo(t, "b"))
	got, err = read(t, p.Addr())
	require.NoError(t, err)
	require.Equal(t, "b", got)
}
