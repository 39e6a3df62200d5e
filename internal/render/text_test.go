package render

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestThousands(t *testing.T) {
	for n, want := range map[int64]string{0: "0", 999: "999", 1000: "1,000", -1234567: "-1,234,567"} {
		require.Equal(t, want, Thousands(n))
	}
}

func TestBytes(t *testing.T) {
	for n, want := range map[int64]string{0: "0 bytes", 9999: "9,999 bytes", 10 << 10: "10.0 KiB", 1536 << 10: "1.5 MiB", 10 << 30: "10.0 GiB", 3 << 40: "3.0 TiB"} {
		require.Equal(t, want, Bytes(n))
	}
}

func TestDuration(t *testing.T) {
	for d, want := range map[time.Duration]string{
		0:                        "0s",
		250 * time.Millisecond:   "0.25s",
		3 * time.Second:          "3.0s",
		62500 * time.Millisecond: "1m3s",
		time.Hour + 2*time.Minute + 3*time.Second: "1h2m3s",
		24 * time.Hour:     "1 day",
		7 * 24 * time.Hour: "7 days",
		36 * time.Hour:     "1.5 days",
	} {
		require.Equal(t, want, Duration(d), d)
	}
	require.Equal(t, "3.0s", Seconds(3))
}

func TestMarkdown(t *testing.T) {
	require.Equal(t, `a\|b \*c\* \_d\_ \`+"`e\\`"+` &lt;f&gt; \[g\] h\\i<br>j`, Markdown("a|b *c* _d_ `e` <f> [g] h\\i\nj"))
}

type failing struct{ n int }

func (f *failing) Write(p []byte) (int, error) {
	f.n++
	return 0, errors.New("disk full")
}

func TestWriterKeepsTheFirstError(t *testing.T) {
	var sb strings.Builder
	w := NewWriter(&sb)
	w.Printf("%d %s\n", 1, "ok")
	require.NoError(t, w.Err())
	require.Equal(t, "1 ok\n", sb.String())

	f := &failing{}
	w = NewWriter(f)
	w.Printf("a")
	w.Printf("b")
	require.EqualError(t, w.Err(), "disk full")
	require.Equal(t, 1, f.n, "nothing is written after the first error")
}
