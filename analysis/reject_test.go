package analysis

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestRejectRewiresAsBefore: reject, rewiring in two matrices of its
// own, rejects what the procedure that copied the graph and made a new
// matrix per rejection rejected, at the same weights, over random graphs
// and p-values of many rejections; and leaves the graph as it was.
func TestRejectRewiresAsBefore(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 5))
	many := 0 // cases of 3 rejections or more: the matrices reused
	for range 2000 {
		m := 1 + rng.IntN(12)
		gr := graph{w: make([]float64, m), g: newMatrix(m)}
		for i := range m {
			gr.w[i] = rng.Float64() / float64(m)
			row := 0.0
			for j := range m {
				if j != i && rng.IntN(2) == 0 {
					gr.g[i][j] = rng.Float64()
					row += gr.g[i][j]
				}
			}
			for j := range m {
				if row > 1 {
					gr.g[i][j] /= row
				}
			}
		}
		before := make([][]float64, m)
		for i := range m {
			before[i] = slices.Clone(gr.g[i])
		}
		ps := make([]float64, m)
		for i := range ps {
			ps[i] = rng.Float64() * 0.02
		}
		alpha := 0.01 + rng.Float64()*0.2
		out, w := gr.reject(ps, alpha)
		wantOut, wantW := rejectCopying(gr, ps, alpha)
		if n := countTrue(out); n >= 3 {
			many++
		}
		if !slices.Equal(out, wantOut) || !slices.Equal(w, wantW) {
			t.Fatalf("m %d: reject %v %v, want %v %v", m, out, w, wantOut, wantW)
		}
		for i := range m {
			if !slices.Equal(gr.g[i], before[i]) {
				t.Fatalf("reject wrote into the graph's row %d", i)
			}
		}
	}
	if many < 200 {
		t.Errorf("%d cases of 3 rejections or more, want 200", many)
	}
}

func countTrue(bs []bool) int {
	n := 0
	for _, b := range bs {
		if b {
			n++
		}
	}
	return n
}

// rejectCopying is reject as it was: the graph copied, a new matrix per
// rejection.
func rejectCopying(gr graph, ps []float64, alpha float64) (out []bool, weight []float64) {
	m := len(ps)
	w := append([]float64(nil), gr.w...)
	weight = make([]float64, m)
	g := make([][]float64, m)
	for i := range g {
		g[i] = append([]float64(nil), gr.g[i]...)
	}
	in := make([]bool, m)
	for i := range in {
		in[i] = true
	}
	out = make([]bool, m)
	for {
		j, best := -1, math.Inf(1)
		for i := range m {
			if in[i] && w[i] > 0 && ps[i] < w[i]*alpha && ps[i]/w[i] < best {
				j, best = i, ps[i]/w[i]
			}
		}
		if j < 0 {
			for i := range m {
				if in[i] {
					weight[i] = w[i]
				}
			}
			return out, weight
		}
		out[j], in[j], weight[j] = true, false, w[j]
		ng := make([][]float64, m)
		for l := range m {
			ng[l] = make([]float64, m)
			if !in[l] {
				continue
			}
			w[l] += w[j] * g[j][l]
			for k := range m {
				if k == l || !in[k] {
					continue
				}
				if den := 1 - g[l][j]*g[j][l]; den > 1e-12 {
					ng[l][k] = (g[l][k] + g[l][j]*g[j][k]) / den
				}
			}
		}
		w[j] = 0
		g = ng
	}
}
