package mapping

import (
	"testing"

	"github.com/dynafold/dynafold/value"
)

// BenchmarkBuild builds the portfolio example's database item (a joined
// row, three templates, a GSI key and three attributes): the per-item cost
// of mapping on the migrate hot path.
func BenchmarkBuild(b *testing.B) {
	cfg, err := Parse([]byte(portfolioMapping))
	if err != nil {
		b.Fatal(err)
	}
	p, err := Compile(cfg, portfolioSchema(), Options{})
	if err != nil {
		b.Fatal(err)
	}
	db := p.Entity("database")
	row := value.Row{value.StringValue("Db123n2d1"), value.IntValue(123), value.StringValue("Srv123n2")}
	for _, arena := range []bool{false, true} {
		b.Run(map[bool]string{false: "alloc", true: "arena"}[arena], func(b *testing.B) {
			var a *Arena
			if arena {
				a = &Arena{}
			}
			var buf []Item
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				buf, err = db.BuildArena(row, buf[:0], a)
				if err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
