package results

// A JSON number to a float64 as strconv.ParseFloat makes it, for the
// numbers the scanner has found (scanner.number): ParseFloat was a
// third of decoding cells.jsonl (35 numbers a line at 10⁵ cells), and
// half of its time went to spellings JSON has not (underscores, hex,
// "inf", signs) and to its interface. The digits become a mantissa and
// a power of ten, which are converted as ParseFloat converts them (its
// exact path, then Eisel–Lemire); a number neither decides (over 19
// digits, a halfway case, beyond the range) is ParseFloat's own. Both
// are correctly rounded, so they agree wherever this one answers
// (TestParseFloatIsStrconv). BenchmarkParseFloat: 55–65 ns a metric
// value against ParseFloat's 138–162 (load ~8 on 2 cores).

import (
	"math"
	"math/big"
	"math/bits"
	"strconv"
	"sync"
	"unsafe"
)

// parseFloat returns strconv.ParseFloat(string(n), 64) of n, a number
// as JSON spells it (scanner.number), and whether it had no error.
func parseFloat(n []byte) (float64, bool) {
	i, neg := 0, false
	if n[0] == '-' {
		i, neg = 1, true
	}
	var man uint64
	nd, dp, sawdot, trunc := 0, 0, false, false
	for ; i < len(n); i++ {
		c := n[i]
		switch {
		case c == '.':
			sawdot, dp = true, nd
			continue
		case c == '0' && nd == 0:
			dp-- // a leading zero
			continue
		case '0' <= c && c <= '9':
			nd++
			if nd <= 19 {
				man = man*10 + uint64(c-'0')
			} else if c != '0' {
				trunc = true
			}
			continue
		}
		break
	}
	if !sawdot {
		dp = nd
	}
	if i < len(n) { // an exponent
		i++
		sign := 1
		switch n[i] {
		case '-':
			sign = -1
			fallthrough
		case '+':
			i++
		}
		e := 0
		for ; i < len(n); i++ {
			if e < 10000 {
				e = e*10 + int(n[i]-'0')
			}
		}
		dp += sign * e
	}
	exp := 0
	if man != 0 {
		exp = dp - min(nd, 19)
	}
	if !trunc {
		if f, ok := exactFloat(man, exp, neg); ok {
			return f, true
		}
		if f, ok := eiselLemire(man, exp, neg); ok {
			return f, true
		}
	}
	f, err := strconv.ParseFloat(unsafe.String(unsafe.SliceData(n), len(n)), 64)
	return f, err == nil
}

// pow10 are the powers of ten a float64 holds exactly.
var pow10 = [...]float64{1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22}

// exactFloat is man×10^exp where both are exact float64s, so that one
// operation rounds it (strconv's atof64exact).
func exactFloat(man uint64, exp int, neg bool) (f float64, ok bool) {
	if man>>52 != 0 {
		return 0, false
	}
	f = float64(man)
	if neg {
		f = -f
	}
	switch {
	case exp == 0:
		return f, true
	case exp > 0 && exp <= 15+22:
		if exp > 22 {
			f *= pow10[exp-22]
			exp = 22
		}
		if f > 1e15 || f < -1e15 {
			return 0, false
		}
		return f * pow10[exp], true
	case exp < 0 && exp >= -22:
		return f / pow10[-exp], true
	}
	return 0, false
}

// The powers of ten of eiselLemire: 10^e's 128-bit mantissa, its top
// bit set and rounded down, for e from pow10Min to pow10Max (strconv's
// table, made from math/big on first use).
const pow10Min, pow10Max = -348, 347

var (
	pow128Once sync.Once
	pow128     [pow10Max - pow10Min + 1][2]uint64 // hi, lo
)

func makePow128() {
	ten := big.NewInt(10)
	for e := pow10Min; e <= pow10Max; e++ {
		p := new(big.Int).Exp(ten, big.NewInt(int64(max(e, -e))), nil)
		var m *big.Int
		if e >= 0 {
			// 10^e shifted to 128 bits, rounded down.
			if s := p.BitLen() - 128; s > 0 {
				m = p.Rsh(p, uint(s))
			} else {
				m = p.Lsh(p, uint(-s))
			}
		} else {
			// 2^(127+L) / 10^-e, 10^-e of L bits: between 2^127 and
			// 2^128 (10^-e is no power of two).
			m = new(big.Int).Quo(new(big.Int).Lsh(big.NewInt(1), uint(127+p.BitLen())), p)
		}
		lo := new(big.Int).And(m, new(big.Int).SetUint64(math.MaxUint64))
		pow128[e-pow10Min] = [2]uint64{new(big.Int).Rsh(m, 64).Uint64(), lo.Uint64()}
	}
}

// eiselLemire is man×10^exp rounded to a float64, ok false where it
// cannot tell (strconv's eiselLemire64; the comments are the sections
// of https://nigeltao.github.io/blog/2020/eisel-lemire.html).
func eiselLemire(man uint64, exp10 int, neg bool) (f float64, ok bool) {
	// Exp10 Range.
	if man == 0 {
		if neg {
			f = math.Float64frombits(1 << 63) // -0
		}
		return f, true
	}
	if exp10 < pow10Min || exp10 > pow10Max {
		return 0, false
	}
	pow128Once.Do(makePow128)
	pow := pow128[exp10-pow10Min]
	exp2 := 1 + (exp10*108853)>>15 // 1 + ⌊exp10 × log₂10⌋

	// Normalization.
	clz := bits.LeadingZeros64(man)
	man <<= uint(clz)
	retExp2 := uint64(exp2+63+1023) - uint64(clz)

	// Multiplication.
	xHi, xLo := bits.Mul64(man, pow[0])

	// Wider Approximation.
	if xHi&0x1FF == 0x1FF && xLo+man < man {
		yHi, yLo := bits.Mul64(man, pow[1])
		mergedHi, mergedLo := xHi, xLo+yHi
		if mergedLo < xLo {
			mergedHi++
		}
		if mergedHi&0x1FF == 0x1FF && mergedLo+1 == 0 && yLo+man < man {
			return 0, false
		}
		xHi, xLo = mergedHi, mergedLo
	}

	// Shifting to 54 Bits.
	msb := xHi >> 63
	retMantissa := xHi >> (msb + 9)
	retExp2 -= 1 ^ msb

	// Half-way Ambiguity.
	if xLo == 0 && xHi&0x1FF == 0 && retMantissa&3 == 1 {
		return 0, false
	}

	// From 54 to 53 Bits.
	retMantissa += retMantissa & 1
	retMantissa >>= 1
	if retMantissa>>53 > 0 {
		retMantissa >>= 1
		retExp2++
	}
	// Subnormal (0 or below) or infinite (0x7FF or above): not here.
	if retExp2-1 >= 0x7FF-1 {
		return 0, false
	}
	retBits := retExp2<<52 | retMantissa&(1<<52-1)
	if neg {
		retBits |= 1 << 63
	}
	return math.Float64frombits(retBits), true
}
