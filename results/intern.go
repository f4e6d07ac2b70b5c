package results

import "strconv"

// interner shares equal strings and equal settings between the records
// (or cells) one decoding makes: at 10⁵ cells, every record's own copy
// of its configuration's settings map was a third of what the records
// took in memory. What it shares is read, never written: no code writes
// into a decoded record's or cell's Settings or Vars.
type interner struct {
	strs  map[string]string
	maps  map[string]map[string]string
	names map[string][]string // Values' names, by nameKey
	key   []byte
}

func newInterner() *interner {
	return &interner{strs: map[string]string{}, maps: map[string]map[string]string{}, names: map[string][]string{}}
}

// str returns the first string equal to s this interner saw.
func (in *interner) str(s string) string {
	if t, ok := in.strs[s]; ok {
		return t
	}
	in.strs[s] = s
	return s
}

// strMap returns the first map equal to m this interner saw; an empty or
// nil map is kept as it is (JSON tells them apart).
func (in *interner) strMap(m map[string]string) map[string]string {
	if len(m) == 0 {
		return m
	}
	b := in.key[:0]
	if len(m) == 1 {
		for k, v := range m {
			b = appendPair(b, k, v)
		}
	} else {
		for _, k := range sortedKeys(m) {
			b = appendPair(b, k, m[k])
		}
	}
	in.key = b
	if t, ok := in.maps[string(b)]; ok {
		return t
	}
	in.maps[string(b)] = m
	return m
}

func (in *interner) config(c *Config) {
	c.Workload, c.Condition = in.str(c.Workload), in.str(c.Condition)
	c.Settings, c.Vars = in.strMap(c.Settings), in.strMap(c.Vars)
}

// record shares r's strings, settings and metric names: the decoder
// makes every record's own copy of each metric name (12 names, 19 MB
// at 10⁵ cells), so the map is made again with the shared ones.
func (in *interner) record(r *Record) {
	r.Commit, r.Status, r.LatencyMethod = in.str(r.Commit), Status(in.str(string(r.Status))), in.str(r.LatencyMethod)
	in.config(&r.Config)
	if len(r.Metrics.names) > 0 {
		r.Metrics.names = in.valueNames(r.Metrics.names)
	}
}

// valueNames returns the first names equal to names this interner saw,
// each name shared too.
func (in *interner) valueNames(names []string) []string {
	b := in.key[:0]
	for _, n := range names {
		b = appendName(b, n)
	}
	in.key = b
	if t, ok := in.names[string(b)]; ok {
		return t
	}
	own := make([]string, len(names))
	for i, n := range names {
		own[i] = in.str(n)
	}
	in.names[string(b)] = own
	return own
}

// appendName appends a name to a key of names, with its length.
func appendName[S string | []byte](b []byte, n S) []byte {
	b = strconv.AppendInt(b, int64(len(n)), 10)
	b = append(b, ':')
	return append(b, n...)
}

// appendPair appends a key and its value to a map's key in the
// interner, each with its length (no separator can be confused).
func appendPair[S string | []byte](b []byte, k, v S) []byte {
	b = strconv.AppendInt(b, int64(len(k)), 10)
	b = append(b, ':')
	b = append(b, k...)
	b = strconv.AppendInt(b, int64(len(v)), 10)
	b = append(b, ':')
	return append(b, v...)
}
