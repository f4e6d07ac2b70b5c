package results_test

import (
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"github.com/pgabtest/abtest/results"
)

// TestParseFloatIsStrconv: every number parseFloat reads, it reads as
// strconv.ParseFloat does, bit for bit and error for error: shortest
// and fixed spellings of random float64s, random digit strings with
// leading zeros, long mantissas and exponents to beyond the range, and
// the known hard cases (halfway, subnormal, the largest float).
func TestParseFloatIsStrconv(t *testing.T) {
	check := func(s string) {
		t.Helper()
		got, ok := results.ParseFloat([]byte(s))
		want, err := strconv.ParseFloat(s, 64)
		if ok != (err == nil) || ok && math.Float64bits(got) != math.Float64bits(want) {
			t.Fatalf("%s: parseFloat %v (ok %v), strconv %v (%v)", s, got, ok, want, err)
		}
	}
	for _, s := range []string{"0", "-0", "0.0", "-0.0", "0e5", "1", "-1", "0.1", "1e23", "1e22", "1e-22", "1e-23", "9007199254740993",
		"9007199254740992", "4503599627370497", "1e15", "123456789012345678", "1234567890123456789", "12345678901234567890",
		"0.000000000000000000000000000001", "1e-400", "1e400", "4.9e-324", "5e-324", "2.4e-324", "2.2250738585072011e-308",
		"2.2250738585072014e-308", "1.7976931348623157e308", "1.7976931348623158e308", "1.7976931348623159e308",
		"179769313486231580793728971405303415079934132710037826936173778980444968292764750946649017977587207096330286416692887910946555547851940402630657488671505820681908902000708383676273854845817711531764475730270069855571366959622842914819860834936475292719074168444365510704342711559699508093042880177904174497791.9999999999999999999999999999999999999999999999999999999999999999999999",
		"1e-348", "1e-349", "1e347", "1e348", "0.1e-347", "2.5", "0.30000000000000004", "100000000000000000000000", "1e0", "1E+2", "1e-0"} {
		check(s)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 300000 {
		f := math.Float64frombits(rng.Uint64())
		if math.IsNaN(f) || math.IsInf(f, 0) {
			continue
		}
		check(strconv.FormatFloat(f, 'g', -1, 64))
		check(strconv.FormatFloat(f, 'e', rng.IntN(22), 64))
		if math.Abs(f) < 1e30 && math.Abs(f) > 1e-30 {
			check(strconv.FormatFloat(f, 'f', -1, 64))
		}
		check(strconv.FormatFloat(1000*(1+0.02*rng.NormFloat64()), 'g', -1, 64))
		var b strings.Builder
		if rng.IntN(2) == 0 {
			b.WriteByte('-')
		}
		lead, digits := rng.IntN(3), 1+rng.IntN(25)
		if lead > 0 {
			b.WriteString("0.")
			b.WriteString(strings.Repeat("0", lead-1))
		}
		dot := rng.IntN(digits + 1)
		for i := range digits {
			if lead == 0 && i == dot && i > 0 {
				b.WriteByte('.')
			}
			if i == 0 && lead == 0 {
				b.WriteByte(byte('1' + rng.IntN(9)))
			} else {
				b.WriteByte(byte('0' + rng.IntN(10)))
			}
		}
		if rng.IntN(2) == 0 {
			b.WriteString("e" + strconv.Itoa(rng.IntN(800)-400))
		}
		check(b.String())
	}
}

// TestPow10Table: the powers of ten are strconv's (its pow10tab.go).
func TestPow10Table(t *testing.T) {
	for e, want := range map[int][2]uint64{
		-348: {0xfa8fd5a0081c0288, 0x1732c869cd60e453}, -5: {0xa7c5ac471b478423, 0x0fcf80dc33721d53},
		-1: {0xcccccccccccccccc, 0xcccccccccccccccc}, 0: {0x8000000000000000, 0}, 28: {0x813f3978f8940984, 0x4000000000000000},
		347: {0xd13eb46469447567, 0x4b7195f2d2d1a9fb},
	} {
		if got := results.Pow10Mantissa(e); got != want {
			t.Errorf("10^%d: %#x, want %#x", e, got, want)
		}
	}
}
