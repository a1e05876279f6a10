package id

import (
	"math/big"
	"testing"
)

// TestStringMatchesBigInt checks the limb arithmetic against math/big.
func TestStringMatchesBigInt(t *testing.T) {
	for i := 0; i < 2000; i++ {
		x := New(uint16(i))
		if i%7 == 0 {
			for j := range x {
				x[j] = 0xff
			}
		}
		n := new(big.Int)
		for j := Size - 1; j >= 0; j-- {
			n.Lsh(n, 8)
			n.Or(n, big.NewInt(int64(x[j])))
		}
		want := make([]byte, 0, StringLen)
		d := big.NewInt(36)
		r := new(big.Int)
		for range StringLen {
			n.QuoRem(n, d, r)
			want = append(want, digits[r.Int64()])
		}
		if got := x.String(); got != string(want) {
			t.Fatalf("%x: String = %s, want %s", x[:], got, want)
		}
	}
}

func BenchmarkString(b *testing.B) {
	x := New(1)
	for b.Loop() {
		_ = x.String()
	}
}
